"""`perfbot bisect`: the first bad commit of GOOD..BAD, measured, most suspicious commits first.

Exit 0 when a culprit is named, 1 for every other outcome the report states (its ``status``: not
confirmed, not reproduced, nothing measured), 2 for a usage error or a bisection that stopped. With
``--artifact DIR`` (or ``$PERFBOT_BISECT_ARTIFACT``, which the action uses: a benchmark can read
every process's command line, never perfbot's environment) it also writes the artifact files
(`bot.runner.bisect_artifact`), and with ``--github-output-fd`` records their SHA-256 as a step
output, as `perfbot bench run` does.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bot.adapters.git_repo import GitRepo, RepoError
from bot.core.bisect import report as bisect_report
from bot.core.bisect.report import BisectError
from bot.core.judge import stats
from bot.core.render import bisect as render_bisect
from bot.errors import UserError
from bot.runner import bench, bisect_artifact, scope
from bot.runner.bisect import BisectOptions, bisect
from bot.runner.progress import Progress
from bot.runner.suites.base import SuiteError

from . import measure_options
from .bench import bench_config, write_digests
from .common import FORMATS, UsageError, emit, percentage, probability, stop_on_sigterm
from .measure_options import non_negative_int

ARTIFACT_VARIABLE = "PERFBOT_BISECT_ARTIFACT"


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "bisect",
        help="find the commit of GOOD..BAD that made a benchmark slower",
        description="Benchmark GOOD against BAD, then bisect the range on this machine, measuring the "
        "commits the risk ranking suspects first, and confirm the culprit against its parent.",
    )
    parser.add_argument("good", metavar="GOOD", help="a revision without the regression")
    parser.add_argument("bad", metavar="BAD", help="a revision with it")
    measure_options.add(parser, config_from="GOOD", runs="side and run")
    parser.add_argument("--suite", required=True, metavar="NAME", help="the benchmark suite to run")
    parser.add_argument(
        "--metric", metavar="NAME", help="metric to bisect on (default: the suite's headline metric)"
    )
    parser.add_argument(
        "--out",
        default="perfbot-bisect",
        metavar="DIR",
        help="folder for the results file of every run (default: ./perfbot-bisect); "
        "a re-run into the same folder reuses the runs already there",
    )
    parser.add_argument(
        "--min-effect",
        type=percentage,
        default=stats.DEFAULT_MIN_EFFECT * 100,
        metavar="PCT",
        help="smallest change that counts, in percent (default 2)",
    )
    parser.add_argument(
        "--alpha",
        type=probability,
        default=stats.DEFAULT_ALPHA,
        metavar="A",
        help="false-alarm rate of each judgement (default 0.01)",
    )
    parser.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one un-timed profiled pass per side of the culprit's confirmation, for its "
        "kernel diff (default: the suite's profile setting); the other runs never "
        "profile",
    )
    parser.add_argument(
        "--artifact",
        metavar="DIR",
        help="also write the artifact files into DIR: bisect.json, reference.results.json, "
        "confirm.results.json (with a culprit) and summary.md (default: "
        f"${ARTIFACT_VARIABLE}, else none)",
    )
    parser.add_argument(
        "--github-output-fd",
        type=non_negative_int,
        metavar="FD",
        help="when the bisection ends, write the SHA-256 of every artifact file to the open "
        "file descriptor FD, as the GitHub Actions step output results-sha256",
    )
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    artifact_dir = args.artifact or os.environ.get(ARTIFACT_VARIABLE)
    artifact = Path(artifact_dir) if artifact_dir else None
    if artifact is not None:
        scope.hide_from_benchmarks()  # where the artifact goes is no benchmark's to learn
    options = BisectOptions(
        good=args.good,
        bad=args.bad,
        suite=args.suite,
        out=Path(args.out),
        measure=measure_options.from_args(args),
        metric=args.metric,
        min_effect=args.min_effect / 100,
        alpha=args.alpha,
        profile=args.profile,
    )
    digests: dict[str, str] = {}
    try:
        try:
            config = bench_config(args.config, options.measure.repo, options.good)
            stop_on_sigterm()
            report = bisect(options, config, Progress(enabled=not args.quiet))
        except (BisectError, bench.BenchError, SuiteError, UserError) as error:
            if artifact is not None:
                digests = _write_stopped(options, str(error), artifact)
            raise UsageError(str(error)) from None
        if artifact is not None:
            try:
                commits = GitRepo.open(options.measure.repo).rev_list(report.good, report.bad)
                digests = bisect_artifact.write(report, artifact, options.written, commits=commits)
            except (BisectError, RepoError) as error:
                raise UsageError(str(error)) from None
        emit(
            args.format,
            report.to_dict,
            lambda: render_bisect.bisect_markdown(report),
            lambda: render_bisect.bisect_text(report),
        )
        return 0 if report.culprit is not None else 1
    finally:
        if args.github_output_fd is not None:
            write_digests(args.github_output_fd, digests)


def _write_stopped(options: BisectOptions, why: str, artifact: Path) -> dict[str, str]:
    """The artifact of a bisection that stopped on an error: its report (status ``error``) alone,
    when GOOD and BAD name commits; else nothing."""
    try:
        good, bad, count = GitRepo.open(options.measure.repo).count_range(options.good, options.bad)
    except RepoError:
        return {}
    report = bisect_report.stopped(
        good=good, bad=bad, suite=options.suite, metric=options.metric or "", commits=count, why=why
    )
    try:
        return bisect_artifact.write(report, artifact, {})
    except BisectError:
        return {}
