"""Build a labelled set of performance regressions from a git history alone (SZZ), scores unseen.

The sets `sglang_regressions.json` and `vllm_regressions.json` were built by reading pull-request
descriptions and issues, and the risk rules were adjusted while looking at them. This script
builds a *held-out* set by another method, fixed before any of its culprits was scored:

1. **Fixes.** A first-parent, non-merge commit of the history whose subject says it fixes a
   slowdown (`FIX_PATTERN`: "perf regression", "performance drop", "slower", "slow <kernel>",
   "performance bug/issue/reduce" together with fix/address/resolve), minus tooling subjects
   (`TOOLING_PATTERN`: benchmark scripts, metrics, logging, CI, tests).
2. **Culprit (SZZ).** The lines each fix deletes or rewrites in source files (not docs, tests,
   CI or benchmarks) are blamed at the fix's parent; the commit that last wrote most of them is
   the culprit, when it lies on the first-parent history at most `MAX_AGE_DAYS` before the fix.
   A fix that only adds lines blames the line above each addition.
3. **Range.** The culprit competes among the commits around it on the first-parent history (30
   before, 29 after), as in the other sets.

Fixes named in ``--exclude`` (the sets the rules were tuned on) are left out, so the held-out set
shares no culprit with them. Nothing here reads a risk score.

    python benchmarks/mine_regressions.py --repo ~/src/sglang \
        --exclude benchmarks/sglang_regressions.json --out benchmarks/sglang_heldout.json \
        --name "https://github.com/sgl-project/sglang (the public fork BBuf/sglang carries its main)"
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

FIX_PATTERN = re.compile(
    r"(?i)perf(ormance)?\s+(regression|drop|issue|bug|reduce)|regression\W.*\bperf|"
    r"\bslow(er)?\b|\bspeed\b.*\bfix|\bfix\w*\b.*\bspeed\b"
)
FIX_VERB = re.compile(r"(?i)\b(fix\w*|address\w*|resolve\w*)\b")
TOOLING_PATTERN = re.compile(
    r"(?i)\bbench\w*|\bmetrics?\b|\blog(ging)?\b|\bci\b|\btests?\b|\bnightly\b|\bcompilation\b|"
    r"\bprofiler\b|\bdocs?\b"
)
MAX_AGE_DAYS = 365
BEFORE, AFTER = 30, 29


def _git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, text=True, errors="replace"
    ).stdout


def is_source(path: str) -> bool:
    """A file of the engine itself: not docs, tests, CI, benchmarks or examples (by name only)."""
    p = PurePosixPath(path)
    folders = {part.lower() for part in p.parts[:-1]}
    if folders & {
        "docs",
        "doc",
        "test",
        "tests",
        "benchmark",
        "benchmarks",
        "examples",
        ".github",
        "scripts",
    }:
        return False
    if p.suffix in {".md", ".rst", ".txt", ".json", ".yml", ".yaml", ".toml", ".cfg", ".lock"}:
        return False
    return not (p.name.startswith(("test_", "bench_")) or p.stem.endswith("_test"))


def is_fix(subject: str) -> bool:
    return bool(
        FIX_PATTERN.search(subject) and FIX_VERB.search(subject) and not TOOLING_PATTERN.search(subject)
    )


def blamed_lines(diff_text: str) -> dict[str, list[int]]:
    """Per source file, the old-side lines a patch (`git show -U0`) deletes or writes under."""
    lines: dict[str, list[int]] = {}
    path = None
    for line in diff_text.splitlines():
        if line.startswith("--- "):
            path = line[6:] if line.startswith("--- a/") else None
        elif line.startswith("@@") and path and is_source(path):
            match = re.match(r"@@ -(\d+)(?:,(\d+))?", line)
            if not match:
                continue
            start, count = int(match[1]), int(match[2] if match[2] is not None else 1)
            # A pure addition (count 0) blames the line it was added under.
            wanted = range(start, start + count) if count else range(max(start, 1), start + 1)
            lines.setdefault(path, []).extend(wanted)
    return lines


def culprit_of(repo: str, fix: str, first_parent: dict[str, int]) -> tuple[str, int, int] | None:
    """The first-parent commit that last wrote most of what ``fix`` rewrites: (sha, lines, of)."""
    counts: Counter[str] = Counter()
    for path, numbers in blamed_lines(_git(repo, "show", "-U0", "--format=", fix)).items():
        ranges = [arg for n in sorted(set(numbers)) for arg in ("-L", f"{n},{n}")]
        try:
            blame = _git(repo, "blame", "--porcelain", *ranges, f"{fix}^", "--", path)
        except subprocess.CalledProcessError:
            continue
        for line in blame.splitlines():
            if re.match(r"^[0-9a-f]{40} \d+ \d+", line):
                counts[line.split()[0]] += 1
    on_main = [(sha, n) for sha, n in counts.most_common() if sha in first_parent]
    if not on_main:
        return None
    sha, n = on_main[0]
    return sha, n, sum(counts.values())


def mine(repo: str, excluded_fixes: set[str], excluded_culprits: set[str]) -> list[dict]:
    log = _git(repo, "log", "--first-parent", "--no-merges", "--format=%H%x09%ct%x09%s", "HEAD")
    history = [line.split("\t", 2) for line in log.splitlines()]
    order = [sha for sha, _, _ in reversed(history)]  # oldest first
    position = {sha: i for i, sha in enumerate(order)}
    when = {sha: int(stamp) for sha, stamp, _ in history}
    subject = {sha: text for sha, _, text in history}
    entries = []
    for sha, _, text in history:
        if not is_fix(text) or sha in excluded_fixes:
            continue
        found = culprit_of(repo, sha, position)
        if found is None:
            continue
        culprit, lines, of = found
        if culprit in excluded_culprits or culprit == sha or when[sha] - when[culprit] > MAX_AGE_DAYS * 86400:
            continue
        at = position[culprit]
        if at - BEFORE - 1 < 0 or at + AFTER >= len(order):
            continue
        entries.append(
            {
                "culprit": {
                    "sha": culprit,
                    "pr": _pr(subject[culprit]),
                    "subject": subject[culprit],
                    "date": _day(when[culprit]),
                },
                "fix": {"sha": sha, "pr": _pr(text), "subject": text, "date": _day(when[sha])},
                "evidence": {
                    "kind": "SZZ: the fix's rewritten lines blamed at its parent",
                    "says": f"{lines} of {of} blamed lines last written by the culprit",
                },
                "range": {
                    "base": order[at - BEFORE - 1],
                    "head": order[at + AFTER],
                    "commits": BEFORE + 1 + AFTER,
                },
            }
        )
    return entries


def _pr(subject: str) -> int | None:
    match = re.search(r"\(#(\d+)\)\s*$", subject)
    return int(match[1]) if match else None


def _day(stamp: int) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="a clone with the first-parent main history")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        help="a labelled set (JSON) whose fixes and culprits are left out",
    )
    parser.add_argument("--out", required=True, help="where to write the held-out set (JSON)")
    parser.add_argument("--name", help="how the set names the repository (default: --repo)")
    args = parser.parse_args()
    fixes, culprits = set(), set()
    for name in args.exclude:
        for entry in json.loads(Path(name).read_text())["regressions"]:
            fixes.add(entry["fix"]["sha"])
            culprits.add(entry["culprit"]["sha"])
    entries = mine(args.repo, fixes, culprits)
    Path(args.out).write_text(
        json.dumps(
            {
                "repository": args.name or args.repo,
                "head": _git(args.repo, "rev-parse", "HEAD").strip(),
                "method": __doc__.split("\n\n")[1].strip(),
                "window": {"before": BEFORE, "after": AFTER},
                "regressions": entries,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"{len(entries)} regressions written to {args.out}")
    for e in entries:
        print(
            f"  {e['culprit']['sha'][:10]} <- fix {e['fix']['sha'][:10]} {e['fix']['subject'][:70]}"
            f"  ({e['evidence']['says']})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
