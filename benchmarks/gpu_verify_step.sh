#!/usr/bin/env bash
# The GPU measurement of docs/benchmarks.md: verify-step A/B (the sample repository's slow commit
# against its parent) and A/A (the parent against itself), tensor parallel over every visible GPU
# (WORLD=N to choose), ABBA rounds, each run's kernel profile on (one un-timed profiled pass per
# side); the whole pair twice, to see whether two runs of the same commits agree. At the end it
# prints the verdicts with their kernel diffs, the speculation speed-up of base and head in each run
# (tok/s with speculation over the plain decode step's), whether the allreduce figures of the two
# runs agree within 5%, the kernels' launching lines (marked where the slow commit changed them) and
# what the per-step map costs the profiled pass (benchmarks/step_map_overhead.py). Run from the
# perfbot checkout on the GPU machine; results land in ${OUT}.
set -uo pipefail
OUT=${OUT:-benchmarks/results/repeat}
ROUNDS=${ROUNDS:-3}
# Which of the two passes to run now: "1 2" (both), or one per call where a call's time is limited;
# the agreement check runs once both passes' files are in ${OUT}.
RUNS=${RUNS:-1 2}
WORLD=${WORLD:-0}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

# `python -m bot` imports only the verb it runs, so the server side's dependencies need not be
# installed here.
perfbot() { "$PY" -m bot "$@"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv
nvidia-smi topo -m
GPUS=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
if [ "${GPUS:-0}" -lt 2 ] || [ "$WORLD" = 1 ]; then
  echo "note: world size 1: the sample's slow commit still pads every allreduce (its memsets are on the" \
       "measured path), but its communicator's out-of-place copy and host synchronisation run only at two" \
       "ranks or more, and the allreduce is not timed at one rank"
fi
# One direct run first: if the benchmark itself is broken here, its full traceback is in this log.
timeout 120 "$PY" -m bot.runner.suites.verify_step_workload --out "$OUT/direct.json" --iters 50 \
  ${WORLD:+--world-size "$WORLD"} 2>&1 | tail -30
SAMPLE=$(mktemp -d)/sample
"$PY" examples/sample_repo.py "$SAMPLE" > "$OUT/sample-manifest.json" || exit 1
BEFORE=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["before_slow"])' "$OUT/sample-manifest.json")
SLOW=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["slow"])' "$OUT/sample-manifest.json")
# The sample's own suite at the chosen world size, its kernel profile on.
cat > "$OUT/config.yml" <<YML
version: 1
bench:
  suites:
    verify-step:
      kind: verify-step
      allreduce: mini_engine.distributed.parallel_state:tensor_model_parallel_all_reduce
      world_size: $WORLD
      profile: true
YML

for run in $RUNS; do
  timeout 420 "$PY" -m bot bench run --repo "$SAMPLE" --base "$BEFORE" --head "$SLOW" --suite verify-step \
    --python "$PY" --rounds "$ROUNDS" --warmup 1 --timeout 240 --config "$OUT/config.yml" --out "$OUT/ab-$run.json" 2>&1 | tee "$OUT/ab-$run.log"
  timeout 420 "$PY" -m bot bench run --repo "$SAMPLE" --base "$BEFORE" --aa --suite verify-step \
    --python "$PY" --rounds "$ROUNDS" --warmup 1 --timeout 240 --config "$OUT/config.yml" --out "$OUT/aa-$run.json" 2>&1 | tee "$OUT/aa-$run.log"
done

for run in $RUNS; do
  for file in ab-$run aa-$run; do
    echo "== perfbot compare $file.json"
    perfbot compare "$OUT/$file.json" | head -40
  done
done
# The speculation break-even of each run: the speed-up of speculation over the plain decode step
# (spec_speedup = tok_s / baseline_tok_s, geometric mean of each side's rounds), base and head, and
# the comparison's break-even line where it has one.
"$PY" - "$OUT" $RUNS <<'PYTHON'
import json, math, subprocess, sys
from pathlib import Path

out, runs = Path(sys.argv[1]), sys.argv[2:]
print("\n| run | side | tok_s (speculation) | baseline_tok_s (plain decode) | spec_speedup |")
print("|---|---|---:|---:|---:|")
for run in runs:
    for kind in ("ab", "aa"):
        path = out / f"{kind}-{run}.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        for side in ("base", "head"):
            cells = []
            for metric in ("tok_s", "baseline_tok_s", "spec_speedup"):
                values = [r["metrics"][metric] for r in data["rounds"]
                          if r["side"] == side and r["ok"] and metric in r["metrics"]]
                cells.append(f"{math.exp(sum(map(math.log, values)) / len(values)):.3f}" if values else "–")
            print(f"| {kind.upper()} {run} | {side} | " + " | ".join(cells) + " |")
        compared = subprocess.run([sys.executable, "-m", "bot", "compare", str(path), "--format", "json"],
                                  capture_output=True, text=True, check=False)
        try:
            spec = json.loads(compared.stdout).get("speculation") or {}
        except ValueError:
            spec = {}
        print(f"|   | {kind.upper()} {run} break-even | {spec.get('break_even') or 'speculation pays on both sides'} | | |")
PYTHON
# The kernel diff's launching lines, marked where the slow commit changed them (the A/B's base side
# also carries the per-step map, step_map), then what the map costs the profiled pass.
git -C "$SAMPLE" diff "$BEFORE" "$SLOW" > "$OUT/slow.diff"
for run in $RUNS; do
  echo "== perfbot compare ab-$run.json --diff slow.diff: launching lines"
  perfbot compare "$OUT/ab-$run.json" --diff "$OUT/slow.diff" | grep -B1 "launched by" | head -40
done
echo "== the per-step map's cost to the profiled pass"
timeout 900 "$PY" benchmarks/step_map_overhead.py --device cuda --world-size "$WORLD" --pairs "${MAP_PAIRS:-3}" \
  2>&1 | tee "$OUT/step-map-overhead.txt"

[ -f "$OUT/ab-1.json" ] && [ -f "$OUT/ab-2.json" ] || { echo "(agreement check: waiting for both passes)"; exit 0; }

# Do two runs of the same commits agree on the allreduce? The geometric mean of each side's rounds,
# run 2 against run 1.
"$PY" - "$OUT" <<'PYTHON'
import json, math, sys
from pathlib import Path

out = Path(sys.argv[1])
metrics = ("allreduce_verify_us", "allreduce_draft_us")
print("\n| run | side | metric | run 1 | run 2 | run 2 / run 1 | within 5% |")
print("|---|---|---|---:|---:|---:|---|")
agree, compared = True, 0
for kind in ("ab", "aa"):
    runs = [json.loads((out / f"{kind}-{n}.json").read_text()) for n in (1, 2)]
    for side in ("base", "head"):
        for metric in metrics:
            centers = []
            for data in runs:
                values = [r["metrics"][metric] for r in data["rounds"]
                          if r["side"] == side and r["ok"] and metric in r["metrics"]]
                centers.append(math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan)
            if any(math.isnan(c) for c in centers):
                print(f"| {kind.upper()} | {side} | {metric} | not measured (one rank) | | | |")
                continue
            ratio = centers[1] / centers[0]
            ok = abs(ratio - 1) <= 0.05
            agree &= ok
            compared += 1
            print(f"| {kind.upper()} | {side} | {metric} | {centers[0]:.2f} | {centers[1]:.2f} | "
                  f"{ratio:.3f} | {'yes' if ok else 'NO'} |")
print("\nallreduce figures of the two runs agree within 5%:",
      ("yes" if agree else "NO") if compared else "not measured (one rank)")
PYTHON
