#!/usr/bin/env bash
# GPU seconds per verdict and per bisect (docs/benchmarks.md, "GPU seconds"): for each perfbot
# checkout in TREES (default: this one; e.g. TREES=".old ." to set an earlier version beside it on
# the same machine), on the verify-step suite with `worker: true` and `profile: true`, 3 rounds per
# side, the config's warm-up (1):
#   - A/B of the sample's slow commit against its parent, and A/A of the parent against itself;
#   - A/B of the regression hidden in cold-looking code (benchmarks/cold_repo.py: a debug-tracing
#     helper that summarises every allreduce's tensor before checking whether tracing is on)
#     against its parent;
#   - the bisect of that repository's ten commits exactly as the action's bisect mode runs it when
#     the App dispatches a case (`perfbot bisect GOOD BAD --profile --format json
#     --github-output-fd 3`, the artifact folder in PERFBOT_BISECT_ARTIFACT), the artifact read back
#     with `perfbot bench report` as the Compare step does.
# Each figure is the wall time of the whole commands, start to verdict (`perfbot bench run` then
# `perfbot bench report`) or dispatch to culprit read back; every progress line is stamped with
# the seconds since its command started, and each results file's timeline (where it has one) is
# printed, with the instants that bound its phases; the RESULT lines are also kept in
# ${OUT}/RESULTS.txt, at the top, where a console cut short does not lose them. Results land in
# ${OUT}/<tree>/<part>/ (this checkout's in current/; a part named again in WHAT in <part>-2/,
# <part>-3/...). WHAT chooses the
# parts: "ab aa cold bisect" (default); BASELINE_WHAT those of the other checkouts (default: WHAT).
set -uo pipefail
OUT=${OUT:-benchmarks/results/gpu-seconds}
TREES=${TREES:-.}
WHAT=${WHAT:-ab aa cold bisect}
WORLD=${WORLD:-0}
PY=${PYTHON:-python3}
HERE=$PWD
OUT=$(mkdir -p "$OUT" && cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
BASE_PYTHONPATH=${PYTHONPATH:-}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
SCRATCH=$(mktemp -d)
PYTHONPATH="$HERE${BASE_PYTHONPATH:+:$BASE_PYTHONPATH}" "$PY" examples/sample_repo.py "$SCRATCH/sample" \
  > "$OUT/sample-manifest.json" || exit 1
PYTHONPATH="$HERE${BASE_PYTHONPATH:+:$BASE_PYTHONPATH}" "$PY" benchmarks/cold_repo.py "$SCRATCH/cold" \
  > "$OUT/cold-manifest.json" || exit 1
field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
BEFORE=$(field "$OUT/sample-manifest.json" before_slow)
SLOW=$(field "$OUT/sample-manifest.json" slow)
GOOD=$(field "$OUT/cold-manifest.json" good)
BAD=$(field "$OUT/cold-manifest.json" bad)
CULPRIT=$(field "$OUT/cold-manifest.json" culprit)
CULPRIT_PARENT=$(git -C "$SCRATCH/cold" rev-parse "$CULPRIT^")
cat > "$OUT/config.yml" <<YML
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

stamp() { "$PY" -u -c 'import sys, time
t = time.monotonic()
for line in sys.stdin:
    print(f"{time.monotonic() - t:7.2f} {line}", end="", flush=True)'; }
label() { if [ "$1" = . ]; then echo current; else basename "$1"; fi; }
seconds() { "$PY" -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.1f}")' "$1" "$2"; }

# verdict TREE NAME REPO BASE HEAD|--aa: perfbot bench run, then perfbot bench report of its folder.
verdict() {
  local tree=$1 name=$2 repo=$3 base=$4 head=$5 dir="$OUT/$(label "$1")/$2" n=1
  while [ -e "$dir" ]; do n=$((n + 1)); dir="$OUT/$(label "$1")/$2-$n"; done
  mkdir -p "$dir"
  local side=(--head "$head"); [ "$head" = --aa ] && side=(--aa)
  local began ended status
  began=$(date +%s.%N)
  (cd "$tree" && PYTHONPATH="$PWD${BASE_PYTHONPATH:+:$BASE_PYTHONPATH}" timeout 400 "$PY" -m bot bench run \
    --repo "$repo" --base "$base" "${side[@]}" --suite verify-step --python "$PY" --rounds 3 --timeout 240 \
    --config "$OUT/config.yml" --out "$dir/results.json") 2>&1 | stamp > "$dir/run.log"
  status=$(cd "$tree" && PYTHONPATH="$PWD${BASE_PYTHONPATH:+:$BASE_PYTHONPATH}" "$PY" -m bot bench report "$dir" \
    --markdown "$dir/report.md")
  ended=$(date +%s.%N)
  echo "RESULT $(label "$tree") $(basename "$dir"): $(seconds "$began" "$ended") s start to verdict, verdict $status" \
    | tee -a "$OUT/RESULTS.txt"
}

# bisect TREE: the action's bisect-mode invocation on the cold repository, then the artifact read back.
bisect() {
  local tree=$1 dir="$OUT/$(label "$1")/bisect"
  rm -rf "$dir" && mkdir -p "$dir/artifact" "$dir/runs"
  local began ended status
  began=$(date +%s.%N)
  (cd "$tree" && PERFBOT_BISECT_ARTIFACT="$dir/artifact" PYTHONSAFEPATH=1 \
    PYTHONPATH="$PWD${BASE_PYTHONPATH:+:$BASE_PYTHONPATH}" timeout 500 "$PY" -m bot bisect "$GOOD" "$BAD" \
    --repo "$SCRATCH/cold" --suite verify-step --out "$dir/runs" --profile --format json \
    --github-output-fd 3 --rounds 3 --max-rounds 5 --config "$OUT/config.yml" --python "$PY" \
    3> "$dir/results-sha256.txt" > "$dir/bisect-stdout.json") 2>&1 | stamp > "$dir/bisect.log"
  status=$(cd "$tree" && PYTHONPATH="$PWD${BASE_PYTHONPATH:+:$BASE_PYTHONPATH}" "$PY" -m bot bench report \
    "$dir/artifact" --good "$GOOD" --bad "$BAD" --suite verify-step --markdown "$dir/summary.md")
  ended=$(date +%s.%N)
  grep "bisect:" "$dir/bisect.log" | grep -v "provenance\|imports" | cut -c1-160
  echo "RESULT $(label "$tree") bisect of 10 commits: $(seconds "$began" "$ended") s dispatch to culprit read back," \
    "status $status, culprit expected ${CULPRIT:0:10}" | tee -a "$OUT/RESULTS.txt"
  head -3 "$dir/summary.md"
}

for tree in $TREES; do
  parts=$WHAT
  [ "$tree" != . ] && parts=${BASELINE_WHAT:-$WHAT}  # what to measure of an earlier version
  for what in $parts; do
    case $what in
      ab) verdict "$tree" ab "$SCRATCH/sample" "$BEFORE" "$SLOW" ;;
      aa) verdict "$tree" aa "$SCRATCH/sample" "$BEFORE" --aa ;;
      cold) verdict "$tree" cold "$SCRATCH/cold" "$CULPRIT_PARENT" "$CULPRIT" ;;
      bisect) bisect "$tree" ;;
    esac
  done
done

# Where the seconds went, from each results file's timeline (the files of a version without one:
# its progress lines, stamped, in run.log).
PYTHONPATH="$HERE${BASE_PYTHONPATH:+:$BASE_PYTHONPATH}" "$PY" - "$OUT" <<'PYTHON'
import json, sys
from pathlib import Path
from bot.runner import timeline

def instants(read) -> str:
    """When the processes were launched and all ready, the rounds and the profiled passes began
    and ended, and the results file was finished (seconds since the run's timeline began)."""
    def of(name):
        return [p for p in read.phases if p.name == name]
    said = []
    for name, label in (("worker start", "processes"), ("round", "rounds"), ("profile", "profiles")):
        phases = of(name)
        if phases:
            began = min(p.began for p in phases)
            ended = max(p.began + p.seconds for p in phases)
            said.append(f"{label} {began:.2f}-{ended:.2f}")
    return ", ".join(said) + (f", results {read.total:.2f}" if read.total is not None else "")

for path in sorted(Path(sys.argv[1]).glob("*/*/results.json")) + sorted(Path(sys.argv[1]).glob("*/bisect/runs/*.json")):
    data = json.loads(path.read_text())
    read = timeline.read(data.get("timeline"))
    if read is None:
        continue
    print(f"\n== {path}")
    print(f"instants: {instants(read)}")
    print(timeline.markdown(read))
PYTHON
