"""Check the risk engine on a real engine history (SGLang, vLLM): do cold commits score low?

Commits are classified by their paths with rules *independent of perfbot's profiles* (so the
check is not circular): docs-only, CI-only, tests-only, or other. The script then triages the
range with perfbot and prints, per class, how the scores are distributed, plus the commits of a
cold class that scored above `low`, for a human to judge.

    python benchmarks/validate_history.py --repo ~/src/sglang --range HEAD~3000..HEAD
    python benchmarks/validate_history.py --repo ~/src/sglang --range bba2fc4..3207427 --show 10
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import PurePosixPath

from bot.adapters import git_repo
from bot.adapters.git_repo import GitRepo
from bot.core.config.schema import RepoConfig
from bot.core.risk import profiles, ruleset, triage


def classify(paths: list[str]) -> str:
    """docs / ci / tests / other, judged only from directory and file names."""

    def kind(path: str) -> str:
        p = PurePosixPath(path)
        parts = set(p.parts[:-1])
        if p.suffix in {".md", ".rst"} or parts & {"docs", "doc"}:
            return "docs"
        if p.parts[0] in {".github", ".buildkite", ".circleci"} or p.name == ".pre-commit-config.yaml":
            return "ci"
        if parts & {"test", "tests"} or p.name.startswith("test_") or p.stem.endswith("_test"):
            return "tests"
        return "other"

    kinds = {kind(path) for path in paths}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--range", required=True)
    parser.add_argument("--show", type=int, default=5, help="cold commits above 'low' to list")
    args = parser.parse_args()

    repo = GitRepo.open(args.repo)
    base, head = git_repo.split_range(args.range)
    base_sha, head_sha, _ = repo.count_range(base, head)
    rules = ruleset.build(RepoConfig(), repo.existing_paths(head_sha, profiles.MARKERS))
    result = triage.rank(repo.range_patches(base_sha, head_sha), rules, args.range)

    by_class: dict[str, list[triage.RankedCommit]] = defaultdict(list)
    for item in result.commits:
        paths = [f.path for f in item.report.files]
        if paths:
            by_class[classify(paths)].append(item)

    print(f"{len(result.commits)} commits in {args.range}, profile {result.profile}\n")
    print(
        f"{'class':<7} {'commits':>7} {'median':>6} {'p95':>5} {'max':>5} "
        f"{'none':>6} {'low':>6} {'medium':>6} {'high':>6}"
    )
    for name in ("docs", "ci", "tests", "mixed", "other"):
        items = by_class.get(name, [])
        if not items:
            continue
        scores = sorted(i.report.score for i in items)
        levels = defaultdict(int)
        for i in items:
            levels[i.report.level] += 1
        p95 = scores[min(len(scores) - 1, int(0.95 * len(scores)))]
        print(
            f"{name:<7} {len(items):>7} {statistics.median(scores):>6g} {p95:>5} {scores[-1]:>5} "
            + " ".join(f"{levels[lv]:>6}" for lv in ("none", "low", "medium", "high"))
        )

    loud = [
        i
        for c in ("docs", "ci", "tests")
        for i in by_class.get(c, [])
        if i.report.level in ("medium", "high")
    ]
    print(f"\ncold-class commits at medium or high: {len(loud)}")
    for item in loud[: args.show]:
        print(f"  {item.commit.sha[:10]} {item.report.score:>3} {item.commit.subject[:70]}")
        for reason in item.report.reasons[:2]:
            print(f"      {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
