#!/usr/bin/env bash
# The GPU measurement of docs/benchmarks.md: verify-step A/B (the sample repository's slow commit
# against its parent) and A/A (the parent against itself), 2-way tensor parallel, ABBA rounds.
# Run from the perfbot checkout on a machine with the GPUs; results land in ${OUT:-benchmarks/results}.
set -uo pipefail
OUT=${OUT:-benchmarks/results}
ROUNDS=${ROUNDS:-5}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PY PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

# `python -m bot` imports only the verb it runs, so the server side's dependencies need not be
# installed here.
perfbot_bench() { "$PY" -m bot "$@"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv
nvidia-smi topo -m
git --version
# One direct run first: if the benchmark itself is broken here, its full traceback is in this log.
timeout 120 "$PY" -m bot.runner.verify_step_bench --out "$OUT/direct.json" --iters 50 2>&1 | tail -30
SAMPLE=$(mktemp -d)/sample
"$PY" examples/sample_repo.py "$SAMPLE" > "$OUT/sample-manifest.json" || exit 1
BEFORE=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["before_slow"])' "$OUT/sample-manifest.json")
SLOW=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["slow"])' "$OUT/sample-manifest.json")

timeout 300 bash -c "$(declare -f perfbot_bench); perfbot_bench bench run --repo '$SAMPLE' --base '$BEFORE' \
  --head '$SLOW' --suite verify-step --rounds $ROUNDS --warmup 1 --timeout 120 --python '$PY' \
  --out '$OUT/verify-step-ab.json'" 2>&1 | tee "$OUT/verify-step-ab.log"
timeout 260 bash -c "$(declare -f perfbot_bench); perfbot_bench bench run --repo '$SAMPLE' --base '$BEFORE' --aa \
  --suite verify-step --rounds $ROUNDS --warmup 1 --timeout 120 --python '$PY' \
  --out '$OUT/verify-step-aa.json'" 2>&1 | tee "$OUT/verify-step-aa.log"
