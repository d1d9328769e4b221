"""Benchmark `perfbot triage` on a 300-commit range against two floors.

The unavoidable work is `git log -p` writing the range's patches (the first floor, "git alone"),
and reading them into a parser's objects: the second floor, "git + unidiff", is the same
`git log -p` perfbot runs, its output split into commits as perfbot reads it, and each commit's
patch parsed by unidiff into a `PatchSet` (no scoring). perfbot adds its own parsing and the
scoring. All three are timed side by side in one run, alternating, in wall time and in CPU time
(this process plus git), and the ratios of the medians are printed. Targets: <= 2.0x git alone
(wall) and <= 1.3x git + unidiff (CPU, the steadier figure on a busy machine; wall printed too).

    python benchmarks/bench_triage.py                                  # a generated repository
    python benchmarks/bench_triage.py --repo ~/src/sglang --range HEAD~300..HEAD
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus import CODE_LINES
from unidiff import PatchSet

from bot.adapters import git_repo
from bot.adapters.git_repo import GitRepo
from bot.core.config.schema import RepoConfig
from bot.core.risk import profiles, ruleset, triage

TARGET = 2.0  # wall time, against git alone
FLOOR_TARGET = 1.3  # CPU time, against git + unidiff

_FILES = [
    "engine/distributed/pynccl.py",
    "engine/distributed/parallel_state.py",
    "engine/model_executor/cuda_graph_runner.py",
    "engine/layers/attention/backend.py",
    "engine/layers/moe/fused_moe.py",
    "engine/managers/scheduler.py",
    "engine/server.py",
    "engine/utils.py",
    "docs/guide.md",
    "test/test_engine.py",
]


def make_repo(root: Path, commits: int, seed: int = 11) -> str:
    """A repository of ``commits`` commits, each editing a few files of an engine-like tree."""
    rng = random.Random(seed)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=env)
    contents = {
        path: [f"def f{i}(self, x):\n" if i % 20 == 0 else f"{rng.choice(CODE_LINES)}\n" for i in range(600)]
        for path in _FILES
    }
    for number in range(commits + 1):
        for path in rng.sample(_FILES, rng.randint(1, 4)):
            lines = contents[path]
            for _ in range(rng.randint(1, 20)):
                at = rng.randrange(len(lines))
                lines[at] = f"{rng.choice(CODE_LINES)}  # {rng.randint(0, 9999)}\n"
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("".join(lines))
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
        subprocess.run(
            ["git", "-C", str(root), "commit", "-q", "-m", f"change {number}"], check=True, env=env
        )
    return f"HEAD~{commits}..HEAD"


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (git), user + system."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measured(fn, *args):
    """(wall seconds, CPU seconds, result) of ``fn(*args)``."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = fn(*args)
    return time.perf_counter() - wall, cpu_seconds() - cpu, result


def git_alone(repo: str, range_text: str) -> None:
    base, head = git_repo.split_range(range_text)
    subprocess.run(
        [
            "git",
            "-C",
            repo,
            "log",
            "--format=%H %P %an %aI %s",
            "-p",
            "-M",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            f"{base}..{head}",
            "--",
        ],
        check=True,
        stdout=subprocess.PIPE,
    )


def git_and_unidiff(repo: str, range_text: str) -> int:
    """The floor with parsing: perfbot's own `git log -p` (same options, read as it arrives and
    split into commits), each commit's patch parsed by unidiff; returns the files parsed."""
    handle = GitRepo.open(repo)
    base, head = git_repo.split_range(range_text)
    base_sha, head_sha, _ = handle.count_range(base, head)
    return sum(len(PatchSet(commit.diff)) for commit in handle.range_patches(base_sha, head_sha))


def perfbot_triage(repo: str, range_text: str) -> triage.Triage:
    handle = GitRepo.open(repo)
    base, head = git_repo.split_range(range_text)
    base_sha, head_sha, _ = handle.count_range(base, head)
    rules = ruleset.build(RepoConfig(), handle.existing_paths(head_sha, profiles.MARKERS))
    return triage.rank(handle.range_patches(base_sha, head_sha), rules, range_text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo")
    parser.add_argument("--range", default="HEAD~300..HEAD")
    parser.add_argument("--commits", type=int, default=300, help="commits of a generated repo")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="perfbot-bench-") as scratch:
        repo, range_text = args.repo, args.range
        if repo is None:
            repo, range_text = scratch, make_repo(Path(scratch), args.commits)
        result = perfbot_triage(repo, range_text)  # warm-up: page cache, imports, rules
        git_and_unidiff(repo, range_text)
        runs: dict[str, list[tuple[float, float]]] = {"git": [], "floor": [], "perfbot": []}
        for _ in range(args.repeat):
            runs["git"].append(measured(git_alone, repo, range_text)[:2])
            runs["floor"].append(measured(git_and_unidiff, repo, range_text)[:2])
            runs["perfbot"].append(measured(perfbot_triage, repo, range_text)[:2])

    top = result.commits[0]
    print(f"range: {args.repo or 'generated repository'} {range_text}: {len(result.commits)} commits")
    print(f"top: {top.commit.sha[:10]} score {top.report.score}; {args.repeat} alternating runs each")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ratios = {}
    for column, name in ((0, "wall"), (1, "CPU")):
        git, floor, mine = (
            statistics.median(run[column] for run in runs[k]) for k in ("git", "floor", "perfbot")
        )
        ratios[name] = (mine / git, mine / floor)
        print(
            f"{name:>4}: git log -p alone {git:.3f} s, git log -p + unidiff {floor:.3f} s, "
            f"perfbot triage {mine:.3f} s; ratio {mine / git:.2f}x git alone, "
            f"{mine / floor:.2f}x git + unidiff"
        )
    # Wall time is what a user waits; CPU time (perfbot + git) ignores the overlap of parsing
    # with git's diffing, so it is the stricter figure and the steadier one on a busy machine.
    ok = ratios["wall"][0] <= TARGET
    floor_ok = ratios["CPU"][1] <= FLOOR_TARGET
    print(
        f"ratio (wall) to git alone: {ratios['wall'][0]:.2f}x (target <= {TARGET}x) -> "
        f"{'OK' if ok else 'MISSED'}"
    )
    print(
        f"ratio (CPU) to git + unidiff: {ratios['CPU'][1]:.2f}x (target <= {FLOOR_TARGET}x) -> "
        f"{'OK' if floor_ok else 'MISSED'}"
    )
    return 0 if ok and floor_ok else 1


if __name__ == "__main__":
    sys.exit(main())
