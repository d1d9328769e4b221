#!/usr/bin/env bash
# `perfbot bisect` on the GPU machine: the sample repository's whole history (GOOD = its first
# commit, BAD = its last), verify-step suite, tensor parallel over every visible GPU (WORLD=N to
# choose), on the headline metric unless METRIC is set, its rounds served by a long-lived worker per
# side between fresh first and closing pairs, the kernel profile of the confirmation run on.
# Results land in ${OUT}. Run from the perfbot checkout on a machine with the GPUs and perfbot's
# dependencies importable.
#
# MODE=action runs instead exactly what the action runs in bisect mode (action.yml, the "Benchmark
# base against head" step with mode bisect, rounds ROUNDS, max-rounds ROUNDS+2, this config and
# engine-python PYTHON): `perfbot bisect GOOD BAD --repo ... --suite verify-step --out RUNS --profile
# --format json --github-output-fd 3` with PERFBOT_BISECT_ARTIFACT naming the artifact folder, then
# checks the artifact files against the SHA-256 perfbot recorded and reads them back with
# `perfbot bench report` as the Compare step does, and prints the seconds from dispatch (perfbot
# starting) to the culprit read back.
set -uo pipefail
OUT=${OUT:-benchmarks/results/bisect}
ROUNDS=${ROUNDS:-3}
METRIC=${METRIC:-}
WORLD=${WORLD:-0}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

SAMPLE=$(mktemp -d)/sample
"$PY" examples/sample_repo.py "$SAMPLE" > "$OUT/sample-manifest.json" || exit 1
read -r FIRST LAST < <("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["first"], m["head"])' \
  "$OUT/sample-manifest.json")

# The sample's own suite (full shape), with its rounds served by a worker per side.
cat > "$OUT/bisect-config.yml" <<YML
version: 1
bench:
  suites:
    verify-step:
      kind: verify-step
      allreduce: mini_engine.distributed.parallel_state:tensor_model_parallel_all_reduce
      world_size: $WORLD
      worker: true
      profile: true
YML

if [ "${MODE:-}" = action ]; then
  artifact="$OUT/artifact" runs="$OUT/runs" recorded="$OUT/results-sha256.txt"
  rm -rf "$artifact" "$runs" && mkdir -p "$artifact" "$runs"
  began=$(date +%s.%N)
  PERFBOT_BISECT_ARTIFACT="$artifact" PYTHONSAFEPATH=1 "$PY" -m bot bisect "$FIRST" "$LAST" --repo "$SAMPLE" \
    --suite verify-step ${METRIC:+--metric "$METRIC"} --out "$runs" --profile --format json \
    --github-output-fd 3 --rounds "$ROUNDS" --max-rounds $((ROUNDS + 2)) --config "$OUT/bisect-config.yml" \
    --python "$PY" 3> "$recorded" > "$OUT/bisect-stdout.json" 2> "$OUT/bisect.log"
  echo "perfbot bisect exit: $?"
  # The Compare step's check: exactly the recorded files, each with the recorded SHA-256.
  sed -n 's/^[0-9a-f]\{64\}  //p' "$recorded" | LC_ALL=C sort > "$OUT/listed.txt"
  (cd "$artifact" && LC_ALL=C ls -A) | diff -q - "$OUT/listed.txt" > /dev/null ||
    echo "the artifact folder holds other files than those perfbot recorded"
  (cd "$artifact" && grep -E '^[0-9a-f]{64}  ' "$recorded" | sha256sum --check --strict --quiet) ||
    echo "an artifact file differs from the one perfbot wrote"
  status=$("$PY" -m bot bench report "$artifact" --good "$FIRST" --bad "$LAST" --suite verify-step \
    --markdown "$OUT/summary-read-back.md")
  ended=$(date +%s.%N)
  grep "bisect:" "$OUT/bisect.log"
  echo "status read back: $status"
  head -5 "$OUT/summary-read-back.md"
  "$PY" -c 'import sys; print(f"dispatch to culprit: {float(sys.argv[2]) - float(sys.argv[1]):.1f} s")' "$began" "$ended"
  exit 0
fi

# `python -m bot` imports only the verb it runs, so the server's dependencies need not be installed.
began=$(date +%s)
"$PY" -m bot bisect "$FIRST" "$LAST" --repo "$SAMPLE" --suite verify-step ${METRIC:+--metric "$METRIC"} \
  --rounds "$ROUNDS" --max-rounds $((ROUNDS + 2)) --warmup 0 --timeout 240 --out "$OUT" \
  --config "$OUT/bisect-config.yml" --format json --python "$PY" > "$OUT/bisect.json" 2> "$OUT/bisect.log"
echo "bisect exit: $? after $(( $(date +%s) - began )) s"
grep "bisect:" "$OUT/bisect.log"
tail -3 "$OUT/bisect.log"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["conclusion"]); print(r["runs"])' "$OUT/bisect.json" || true
# The kernels of the culprit against its parent (the confirmation's profiled pass).
for confirm in "$OUT"/confirm-*.json; do
  [ -f "$confirm" ] && "$PY" -m bot compare "$confirm" | sed -n '/^kernels/,$p'
done
