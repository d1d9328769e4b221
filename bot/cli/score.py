"""`perfbot score`: the risk of one unified diff."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from bot.core.config import CONFIG_PATH
from bot.core.config.source import WORK_TREE
from bot.core.render import risk as render_risk
from bot.core.risk import diff as diffs
from bot.core.risk import ruleset
from bot.core.risk import scoring as risk

from . import step_map
from .common import UsageError, add_risk_options, emit, fails, read_config, read_input

if TYPE_CHECKING:
    from bot.adapters.git_repo import GitRepo


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score one unified diff for performance risk",
        description="Score a unified diff (a file, or - for standard "
        "input) 0-100 for risk to inference hot paths.",
    )
    parser.add_argument(
        "diff", nargs="?", default="-", metavar="DIFF", help="diff file, or - (default) for standard input"
    )
    parser.add_argument(
        "--repo",
        metavar="PATH",
        help="a checkout of the changed tree: its files locate enclosing "
        f"functions, and its {CONFIG_PATH} is the default config",
    )
    parser.add_argument(
        "--max-mib", type=int, default=256, help="refuse diffs larger than this many MiB (default 256)"
    )
    add_risk_options(parser)
    step_map.add_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    data = read_input(args.diff, args.max_mib * 2**20)
    repo = _open(args.repo) if args.repo else None
    mapped = step_map.read(args.map, repo) if args.map else None
    text = repo.config_text(WORK_TREE) if repo is not None and args.config is None else None
    config = read_config(args.config, text, WORK_TREE)  # None: no file, the built-in profiles as they are
    parsed = diffs.parse(data)
    where = "standard input" if args.diff == "-" else args.diff
    if not data.strip():
        parsed = dataclasses.replace(
            parsed, warnings=[f"{where} is empty (is it a unified diff?)", *parsed.warnings]
        )
    if args.fail_on is not None and not parsed.files:
        # A gate that passes on an empty or mangled diff would let anything through.
        raise UsageError(
            f"{where}: no file changes found (is it a unified diff?); "
            f"--fail-on {args.fail_on} has nothing to judge"
        )
    rules = ruleset.build(config, (f.path for f in parsed.files), args.profile)
    source = None
    if repo is not None:

        def source(path: str) -> list[str] | None:
            text = repo.read_file(path)
            return text.splitlines() if text is not None else None

    evidence = (
        step_map.evidence(mapped, repo, (f.path for f in parsed.files), diff=parsed) if mapped else None
    )
    report = risk.score(parsed, rules, source, evidence)
    emit(
        args.format,
        report.to_dict,
        lambda: render_risk.report_markdown(report),
        lambda: render_risk.report_text(report),
    )
    return 1 if fails(report.level, args.fail_on) else 0


def _open(path: str) -> GitRepo:
    from bot.adapters.git_repo import GitRepo  # GitPython, only when a checkout is named

    return GitRepo.open(path)
