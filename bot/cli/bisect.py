"""`perfbot bisect`: the first bad commit of GOOD..BAD, measured, most suspicious commits first."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.core.bisect.report import BisectError
from bot.core.judge import stats
from bot.core.render import bisect as render_bisect
from bot.runner import bench
from bot.runner.bisect import BisectOptions, bisect
from bot.runner.progress import Progress
from bot.runner.suites.base import SuiteError

from . import measure_options
from .bench import bench_config
from .common import FORMATS, UsageError, emit, percentage, probability, stop_on_sigterm


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "bisect", help="find the commit of GOOD..BAD that made a benchmark slower",
        description="Benchmark GOOD against BAD, then bisect the range on this machine, measuring the "
                    "commits the risk ranking suspects first, and confirm the culprit against its parent.")
    parser.add_argument("good", metavar="GOOD", help="a revision without the regression")
    parser.add_argument("bad", metavar="BAD", help="a revision with it")
    measure_options.add(parser, config_from="GOOD", runs="side and run")
    parser.add_argument("--suite", required=True, metavar="NAME", help="the benchmark suite to run")
    parser.add_argument("--metric", metavar="NAME",
                        help="metric to bisect on (default: the suite's headline metric)")
    parser.add_argument("--out", default="perfbot-bisect", metavar="DIR",
                        help="folder for the results file of every run (default: ./perfbot-bisect); "
                             "a re-run into the same folder reuses the runs already there")
    parser.add_argument("--min-effect", type=percentage, default=stats.DEFAULT_MIN_EFFECT * 100,
                        metavar="PCT",
                        help="smallest change that counts, in percent (default 2)")
    parser.add_argument("--alpha", type=probability, default=stats.DEFAULT_ALPHA, metavar="A",
                        help="false-alarm rate of each judgement (default 0.01)")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    options = BisectOptions(
        good=args.good, bad=args.bad, suite=args.suite, out=Path(args.out),
        measure=measure_options.from_args(args), metric=args.metric, min_effect=args.min_effect / 100,
        alpha=args.alpha)
    config = bench_config(args.config, options.measure.repo, options.good)
    stop_on_sigterm()
    try:
        report = bisect(options, config, Progress(enabled=not args.quiet))
    except (BisectError, bench.BenchError, SuiteError) as error:
        raise UsageError(str(error)) from None
    emit(args.format, report.to_dict, lambda: render_bisect.bisect_markdown(report),
         lambda: render_bisect.bisect_text(report))
    return 0 if report.culprit is not None else 1
