#!/usr/bin/env bash
# `make test` RUNS times in a row (default 10) from one fresh clone of this repository's HEAD, with
# another job on the machine all along: one process keeping one core busy at normal priority (set
# OTHER_JOB="" for none). Every run's log is kept; each prints one line, and the end a summary:
# how many passed, the longest streak, and every failure's test ids.
#   benchmarks/make_test_repeatedly.sh [DIR]      (DIR: where to clone; a fresh temporary folder by default)
# Services as CI starts them (tests/support/ci_services.sh); REPEAT_REDIS_URL gives the runs a Redis
# of their own, so that tests run meanwhile from another checkout never flush their databases.
set -euo pipefail
runs="${RUNS:-10}"
source_root="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
dir="${1:-$(mktemp -d)/perfbot}"
git clone --quiet "$source_root" "$dir"
cd "$dir"
echo "make test x $runs in $dir at $(git rev-parse --short HEAD), logs in $dir/.repeat"
mkdir -p .repeat
# shellcheck source=/dev/null
source tests/support/ci_services.sh >.repeat/services.log 2>&1
export PERFBOT_TEST_REDIS_URL="${REPEAT_REDIS_URL:-$PERFBOT_TEST_REDIS_URL}"

other=""
OTHER_JOB="${OTHER_JOB-python3 -c 'while True: pass'}"
if [ -n "$OTHER_JOB" ]; then
  bash -c "exec $OTHER_JOB" &
  other=$!
  trap 'kill "$other" 2>/dev/null || true' EXIT
  echo "the other job: pid $other, $OTHER_JOB"
fi

passed=0 streak=0 best=0
for run in $(seq 1 "$runs"); do
  log=".repeat/make-test-$run.log"
  start=$(date +%s)
  if make test >"$log" 2>&1; then status=passed; else status=FAILED; fi
  seconds=$(( $(date +%s) - start ))
  counts="$(grep -E '^[0-9]+ (passed|failed)' "$log" | tr '\n' ';' || true)"
  echo "run $run: $status in ${seconds} s, load average $(cut -d' ' -f1-3 /proc/loadavg); $counts"
  if [ "$status" = passed ]; then
    passed=$((passed + 1)); streak=$((streak + 1)); [ "$streak" -gt "$best" ] && best=$streak
  else
    streak=0
    grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/    /' || tail -n 5 "$log" | sed 's/^/    /'
  fi
done
echo "make test: $passed of $runs passed, longest streak $best"
[ "$passed" = "$runs" ]
