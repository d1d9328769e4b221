"""`perfbot triage`: rank the commits of a range, most suspicious first."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from bot.adapters import git_repo
from bot.adapters.git_repo import GitRepo
from bot.core.config.source import WORK_TREE
from bot.core.render import risk as render_risk
from bot.core.risk import diff, profiles, ruleset, triage
from bot.runner.progress import Progress

from . import step_map
from .common import add_risk_options, emit, fails, read_config
from .measure_options import positive_int


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "triage",
        help="rank the commits of BASE..HEAD by performance risk",
        description="Rank every commit of BASE..HEAD (reachable from HEAD, not from BASE) by "
        "performance risk, most suspicious first.",
    )
    parser.add_argument("range", metavar="BASE..HEAD")
    parser.add_argument(
        "--repo", default=".", metavar="PATH", help="the git repository (default: the current directory)"
    )
    parser.add_argument("--limit", type=positive_int, metavar="N", help="show only the N most suspicious")
    parser.add_argument("--no-files", action="store_true", help="text format: omit file lists")
    parser.add_argument("--quiet", action="store_true", help="no progress on standard error")
    add_risk_options(parser)
    step_map.add_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    base, head = git_repo.split_range(args.range)
    repo = GitRepo.open(args.repo)
    mapped = step_map.read(args.map, repo) if args.map else None
    text = repo.config_text(WORK_TREE) if args.config is None else None
    config = read_config(args.config, text, WORK_TREE)  # None: no file, the built-in profiles as they are
    progress = Progress(enabled=not args.quiet and sys.stderr.isatty(), rewrite=True)
    base_sha, head_sha, total = repo.count_range(base, head)
    rules = ruleset.build(config, repo.existing_paths(head_sha, profiles.MARKERS), args.profile)
    progress.say(f"reading {total} commits of {args.range} ...")
    commits: Iterable[triage.Commit] = repo.range_patches(base_sha, head_sha)
    evidence = None
    if mapped:
        # The map's call graph reads the files the range changes too (a default copied into a
        # constant the step reads): the patches are read whole first, only when a map is given.
        commits = list(commits)
        changed = sorted({f.path for c in commits for f in diff.parse(c.diff).files})
        evidence = step_map.evidence(mapped, repo, changed, fallback=base_sha)
    result = triage.rank(
        commits, rules, args.range, lambda done: progress.count("scoring commit", done, total), evidence
    )
    progress.done()
    if args.limit is not None:
        result = result.top(args.limit)
    emit(
        args.format,
        result.to_dict,
        lambda: render_risk.triage_markdown(result),
        lambda: render_risk.triage_text(result, show_files=not args.no_files),
    )
    worst = result.commits[0].report.level if result.commits else "none"
    return 1 if fails(worst, args.fail_on) else 0
