"""Benchmark `perfbot score` on a ~100k-changed-line diff against unidiff's parse alone.

The unavoidable work is unidiff parsing the text; perfbot's scoring adds splitting, rule matching
and reasons on top. Both are timed side by side in one run, alternating, and the ratio of the
medians is printed (target: <= 1.5).

    python benchmarks/bench_score.py                      # a synthetic diff (deterministic)
    python benchmarks/bench_score.py --repo ~/src/sglang --range HEAD~400..HEAD   # a real one
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time

from corpus import CODE_LINES
from unidiff import PatchSet

from bot.core.config.schema import RepoConfig
from bot.core.risk import diff as diffs
from bot.core.risk import ruleset
from bot.core.risk import scoring as risk

TARGET = 1.5

_PATHS = [
    "python/engine/distributed/device_communicators/pynccl.py",
    "python/engine/distributed/parallel_state.py",
    "python/engine/model_executor/cuda_graph_runner.py",
    "python/engine/layers/attention/flash_backend.py",
    "python/engine/layers/moe/fused_moe.py",
    "python/engine/managers/scheduler.py",
    "python/engine/entrypoints/http_server.py",
    "python/engine/utils/common.py",
    "docs/usage.md",
    "test/test_engine.py",
]
_FUNCS = ["all_reduce", "capture", "forward", "schedule", "handle_request", "helper"]


def synthetic_diff(changed_lines: int, seed: int = 7) -> str:
    """A git-style diff of Python files with ~``changed_lines`` added+removed lines."""
    rng = random.Random(seed)
    out, total, file_no = [], 0, 0
    while total < changed_lines:
        path = f"{_PATHS[file_no % len(_PATHS)][:-3]}_{file_no}{_PATHS[file_no % len(_PATHS)][-3:]}"
        file_no += 1
        out += [
            f"diff --git a/{path} b/{path}",
            "index 1111111..2222222 100644",
            f"--- a/{path}",
            f"+++ b/{path}",
        ]
        start = 10
        for _ in range(rng.randint(3, 12)):
            removed = [rng.choice(CODE_LINES) for _ in range(rng.randint(0, 6))]
            added = [rng.choice(CODE_LINES) for _ in range(rng.randint(1, 12))]
            context = ["    def helper(self):", "        pass", ""]
            out.append(
                f"@@ -{start},{len(removed) + 6} +{start},{len(added) + 6} @@ def {rng.choice(_FUNCS)}(self):"
            )
            out += [" " + c for c in context]
            out += ["-" + line for line in removed] + ["+" + line for line in added]
            out += [" " + c for c in context]
            start += len(added) + 40
            total += len(removed) + len(added)
    return "\n".join(out) + "\n"


def real_diff(repo: str, range_text: str) -> str:
    base, _, head = range_text.partition("..")
    return subprocess.run(
        ["git", "-C", repo, "diff", "--no-color", base, head or "HEAD"], check=True, capture_output=True
    ).stdout.decode("utf-8", "replace")


def timed(fn, *args) -> float:
    """CPU seconds of ``fn(*args)``: steadier than wall time on a machine doing other work."""
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


def score_text(text: str) -> risk.RiskReport:
    parsed = diffs.parse(text)
    rules = ruleset.build(RepoConfig(), (f.path for f in parsed.files))
    return risk.score(parsed, rules)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo")
    parser.add_argument("--range", default="HEAD~400..HEAD")
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    text = real_diff(args.repo, args.range) if args.repo else synthetic_diff(args.lines)
    changed = sum(1 for line in text.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---")))
    source = f"{args.repo} {args.range}" if args.repo else "synthetic"
    print(f"diff: {source}, {len(text) / 2**20:.1f} MiB, {changed} changed lines")

    report = score_text(text)  # warm-up: imports, rule compilation, caches
    parse_times, score_times = [], []
    for _ in range(args.repeat):
        parse_times.append(timed(PatchSet, text))
        score_times.append(timed(score_text, text))
    base, ours = statistics.median(parse_times), statistics.median(score_times)
    ratio = ours / base
    print(f"unidiff parse alone: median {base:.3f} CPU s over {args.repeat} alternating runs")
    print(
        f"perfbot score:       median {ours:.3f} CPU s  (score {report.score}, "
        f"{len(report.files)} files, {len(report.signals)} reasons)"
    )
    print(f"ratio: {ratio:.2f}x (target <= {TARGET}x) -> {'OK' if ratio <= TARGET else 'MISSED'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
