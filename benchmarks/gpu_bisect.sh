#!/usr/bin/env bash
# `perfbot bisect` on the GPU machine: the sample repository's whole history (GOOD = its first
# commit, BAD = its last), verify-step suite, 2-way tensor parallel. Results land in ${OUT}.
# Run from the perfbot checkout on a machine with the GPUs and perfbot's dependencies importable.
set -uo pipefail
OUT=${OUT:-benchmarks/results/bisect}
ROUNDS=${ROUNDS:-3}
METRIC=${METRIC:-verify_piecewise_ms}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

SAMPLE=$(mktemp -d)/sample
"$PY" examples/sample_repo.py "$SAMPLE" > "$OUT/sample-manifest.json" || exit 1
read -r FIRST LAST < <("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["first"], m["head"])' \
  "$OUT/sample-manifest.json")

# The sample's own suite, at half its depth and iterations: each round is a fresh two-rank process,
# and start-up (torch, NCCL, weights, graph capture) dominates a round.
cat > "$OUT/bisect-config.yml" <<'YML'
version: 1
bench:
  suites:
    verify-step:
      kind: verify-step
      allreduce: mini_engine.distributed.parallel_state:tensor_model_parallel_all_reduce
      iters: 50
      shape: {layers: 8}
YML

# `python -m bot` imports only the verb it runs, so the server's dependencies need not be installed.
"$PY" -m bot bisect "$FIRST" "$LAST" --repo "$SAMPLE" --suite verify-step --metric "$METRIC" \
  --rounds "$ROUNDS" --max-rounds $((ROUNDS + 2)) --warmup 0 --timeout 120 --out "$OUT" \
  --config "$OUT/bisect-config.yml" --format json --python "$PY" > "$OUT/bisect.json" 2> "$OUT/bisect.log"
echo "bisect exit: $?"
grep "bisect:" "$OUT/bisect.log"
tail -3 "$OUT/bisect.log"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["conclusion"]); print(r["runs"])' "$OUT/bisect.json" || true
