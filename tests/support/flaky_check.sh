#!/usr/bin/env bash
# The flakiness check: the test files a change adds or edits, run several times in a row while
# other processes keep every core busy, so that a test which passes only on a quiet machine (a race
# with a file being written, a deadline too tight for a loaded runner) fails here, not one run in
# ten on main.
#
#   tests/support/flaky_check.sh                 # the test files changed since HEAD~1
#   tests/support/flaky_check.sh origin/main     # ... since the merge base with origin/main
#   FLAKY_RUNS=10 tests/support/flaky_check.sh   # runs per file set (default 5)
#   tests/support/flaky_check.sh -- tests/runner/test_workers.py   # these files, whatever changed
#
# `make flaky` runs the first form (FLAKY_BASE=origin/main for the second). The slow tests among the files
# run too (-m 'slow or not slow'): a flaky slow test is as red as a quick one. Exits 0 when every
# run passed or no test file changed, 1 on the first failing run (its output is shown).
set -euo pipefail

cd "$(dirname "$0")/../.."
PYTEST=${PYTEST:-.venv/bin/pytest}
RUNS=${FLAKY_RUNS:-5}
# One busy process per core, plus one: the tests then share every core with something else.
HOGS=${FLAKY_HOGS:-$(($(nproc) + 1))}

files=()
if [[ "${1:-}" == "--" ]]; then
    shift
    files=("$@")
else
    base=${1:-HEAD~1}
    if ! since=$(git merge-base "$base" HEAD 2>/dev/null); then
        echo "flaky_check: $base is not a revision of this repository" >&2
        exit 2
    fi
    # Added, copied, modified or renamed test modules that still exist (a deleted one cannot flake).
    while IFS= read -r path; do
        [[ -f "$path" ]] && files+=("$path")
    done < <(git diff --name-only --diff-filter=ACMR "$since" -- 'tests/**/test_*.py' 'tests/test_*.py')
    # Uncommitted edits count too, so that the check can run before the commit.
    while IFS= read -r path; do
        [[ -f "$path" && " ${files[*]:-} " != *" $path "* ]] && files+=("$path")
    done < <(git diff --name-only --diff-filter=ACMR HEAD -- 'tests/**/test_*.py' 'tests/test_*.py')
fi

if [[ ${#files[@]} -eq 0 ]]; then
    echo "flaky_check: no test file changed; nothing to run"
    exit 0
fi

hogs=()
stop_hogs() {
    for pid in "${hogs[@]:-}"; do
        [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
    done
    for pid in "${hogs[@]:-}"; do
        [[ -n "$pid" ]] && wait "$pid" 2>/dev/null || true
    done
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM HUP
for _ in $(seq "$HOGS"); do
    python3 -c 'while True: pass' &
    hogs+=("$!")
done

echo "flaky_check: ${#files[@]} test file(s), $RUNS runs, beside $HOGS busy processes: ${files[*]}"
log=$(mktemp)
trap 'stop_hogs; rm -f "$log"' EXIT
for run in $(seq "$RUNS"); do
    if ! "$PYTEST" -q -x -m 'slow or not slow' -p no:cacheprovider "${files[@]}" >"$log" 2>&1; then
        cat "$log"
        echo "flaky_check: run $run of $RUNS failed (the output above)" >&2
        exit 1
    fi
    echo "flaky_check: run $run of $RUNS passed ($(tail -n 1 "$log"))"
done
echo "flaky_check: all $RUNS runs passed"
