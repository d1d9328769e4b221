"""`perfbot compare`: statistics and verdicts for a results file of `perfbot bench run`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.core.judge import profile, results, stats
from bot.core.render import chart as render_chart
from bot.core.render import compare as render_compare
from bot.core.render.kernels import ChangedLines, changed_lines

from .common import FORMATS, UsageError, emit, percentage, probability, read_input

FAIL_ON = ("regression", "inconclusive")


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="judge a results file: regression, improvement, unchanged or inconclusive",
        description="Compare the base and head rounds of a results file metric by metric (a "
        "random-effects model of the rounds, t interval, Holm across the primary "
        "metrics) and say what changed.",
    )
    parser.add_argument("results", metavar="RESULTS.json", help="results file, or - for standard input")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument(
        "--min-effect",
        type=percentage,
        default=stats.DEFAULT_MIN_EFFECT * 100,
        metavar="PCT",
        help="smallest change worth a verdict, in percent (default 2)",
    )
    parser.add_argument(
        "--alpha",
        type=probability,
        default=stats.DEFAULT_ALPHA,
        metavar="A",
        help="false-alarm rate across all metrics of the file (default 0.01)",
    )
    parser.add_argument(
        "--ignore-env",
        action="append",
        default=[],
        metavar="GLOB",
        help="fingerprint key (glob, e.g. 'packages.torch') that may differ between "
        "base and head without withholding the verdict; repeatable",
    )
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        metavar="VERDICT",
        help="exit 1 on a regression (or an error verdict); 'inconclusive': also "
        "when the run could not decide",
    )
    parser.add_argument(
        "--diff",
        metavar="DIFF",
        help="the change as a unified diff (git diff BASE HEAD > change.diff): the "
        "kernel diff marks the launching lines it changed",
    )
    parser.add_argument(
        "--max-mib", type=int, default=64, help="refuse results files larger than this many MiB (default 64)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    name = "standard input" if args.results == "-" else args.results
    if args.results == "-" and sys.stdin.isatty():
        raise UsageError("no results given: name a results file or pipe one to standard input")
    if Path(args.results).is_dir():
        raise UsageError(f"{name}: is a directory, not a results file")
    try:
        loaded = results.load(read_input(args.results, args.max_mib * 2**20), name)
    except results.ResultsError as error:
        raise UsageError(str(error)) from None
    changed = read_diff(args.diff, args.max_mib) if args.diff else None
    comparison = stats.decide(loaded, args.min_effect / 100, args.alpha, ignore_env=args.ignore_env)
    kernels = profile.diff_of(loaded.base.profile, loaded.head.profile)
    emit(
        args.format,
        lambda: {
            "headline": render_compare.headline(comparison),
            **comparison.to_dict(),
            "charts": render_chart.charts_json(loaded, comparison),
            **({"kernels": kernels.to_dict()} if kernels is not None else {}),
        },
        lambda: render_compare.compare_markdown(loaded, comparison, changed=changed),
        lambda: render_compare.compare_text(loaded, comparison, changed),
    )
    return 1 if fails(comparison.verdict, args.fail_on) else 0


def read_diff(path: str, max_mib: int) -> ChangedLines:
    """The lines a unified diff file changed (a user mistake is one line, exit 2)."""
    if path == "-":
        raise UsageError("--diff: name a file (standard input may already carry the results)")
    if Path(path).is_dir():
        raise UsageError(f"--diff {path}: is a directory, not a diff")
    text = read_input(path, max_mib * 2**20).decode("utf-8", errors="replace")
    if text.strip() and not text.lstrip().startswith(("diff ", "--- ", "Index: ", "From ")):
        raise UsageError(f"--diff {path}: not a unified diff (git diff BASE HEAD writes one)")
    return changed_lines(text, by="the diff")


def fails(verdict: str, fail_on: str | None) -> bool:
    if fail_on is None:
        return False
    failing = {"regression", "error"} | ({"inconclusive"} if fail_on == "inconclusive" else set())
    return verdict in failing
