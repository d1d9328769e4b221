"""`perfbot triage`: rank the commits of a range, most suspicious first."""

from __future__ import annotations

import argparse
import sys
import time

from bot.adapters import git_repo
from bot.core.config.schema import CONFIG_PATH
from bot.core.render import risk as render_risk
from bot.core.risk import profiles, ruleset, triage

from .common import add_risk_options, emit, fails, load_config, with_profile


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "triage", help="rank the commits of BASE..HEAD by performance risk",
        description="Rank every commit of BASE..HEAD (reachable from HEAD, not from BASE) by "
                    "performance risk, most suspicious first.")
    parser.add_argument("range", metavar="BASE..HEAD")
    parser.add_argument("--repo", default=".", metavar="PATH",
                        help="the git repository (default: the current directory)")
    parser.add_argument("--limit", type=int, metavar="N", help="show only the N most suspicious")
    parser.add_argument("--no-files", action="store_true", help="text format: omit file lists")
    parser.add_argument("--quiet", action="store_true", help="no progress on standard error")
    add_risk_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    base, head = git_repo.split_range(args.range)
    repo = git_repo.open_repo(args.repo)
    config = with_profile(load_config(args.config, git_repo.read_file(repo, CONFIG_PATH)),
                          args.profile)
    progress = _Progress(enabled=not args.quiet and sys.stderr.isatty())
    base_sha, head_sha, total = git_repo.count_range(repo, base, head)
    rules = ruleset.build(config, git_repo.existing_paths(repo, head_sha, profiles.MARKERS))
    progress.say(f"reading {total} commits of {args.range} ...")
    commits = git_repo.range_patches(repo, base_sha, head_sha)
    result = triage.rank(commits, rules, args.range, lambda done: progress.count(done, total))
    progress.done()
    if args.limit is not None:
        result.commits = result.commits[: max(args.limit, 0)]
    emit(args.format, result.to_dict, lambda: render_risk.triage_markdown(result),
         lambda: render_risk.triage_text(result, show_files=not args.no_files))
    worst = result.commits[0].report.level if result.commits else "none"
    return 1 if fails(worst, args.fail_on) else 0


class _Progress:
    """One rewritten status line on a terminal's standard error; silent when piped."""

    def __init__(self, enabled: bool):
        self.enabled, self.last = enabled, 0.0

    def say(self, text: str) -> None:
        if self.enabled:
            sys.stderr.write(f"\r\033[K{text}")
            sys.stderr.flush()

    def count(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - self.last > 0.2:
            self.last = now
            self.say(f"scoring commit {done}/{total}")

    def done(self) -> None:
        self.say("")
