"""`perfbot bench run`: benchmark base against head on this machine and write a results file."""

from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bot.core.config import suite_kinds

from . import measure_options
from .common import Parser, UsageError, load_config, stop_on_sigterm
from .measure_options import non_negative_int

if TYPE_CHECKING:
    from bot.core.config.schema import RepoConfig
    from bot.runner import bench


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="benchmark revisions on this machine (runner side)",
        description="Runner-side benchmarking.",
    )
    verbs = parser.add_subparsers(
        dest="bench_command", required=True, metavar="SUBCOMMAND", parser_class=Parser
    )
    run = verbs.add_parser(
        "run",
        help="benchmark BASE against HEAD, interleaved, and write a results file",
        description="Check out BASE and HEAD as git worktrees, run each suite's rounds in ABBA order "
        "(each round a fresh process with a timeout) and write the results file.",
    )
    measure_options.add(run, config_from="the base revision")
    run.add_argument("--base", required=True, metavar="REV")
    run.add_argument("--head", metavar="REV", help="required unless --aa")
    run.add_argument(
        "--suite",
        action="append",
        dest="suites",
        metavar="NAME",
        help=f"suite to run (repeatable): {', '.join(suite_kinds.built_in())} or one of the config's",
    )
    run.add_argument("--aa", action="store_true", help="A/A noise run: --base on both sides")
    run.add_argument(
        "--out",
        metavar="FILE",
        help="results file; with several suites, FILE's stem + .SUITE.json for each (default: "
        "$PERFBOT_BENCH_OUT, else results.json)",
    )
    run.add_argument(
        "--stop-on-failure",
        action="store_true",
        help="stop at the first failed round (default: record it and go on)",
    )
    run.add_argument(
        "--repo-name",
        metavar="OWNER/NAME",
        help="name recorded in the results (default: $GITHUB_REPOSITORY or the folder name)",
    )
    run.add_argument(
        "--summary",
        metavar="FILE",
        help="append a Markdown summary of the rounds to FILE (default: $PERFBOT_BENCH_SUMMARY, "
        "else $GITHUB_STEP_SUMMARY when set)",
    )
    run.add_argument(
        "--github-output-fd",
        type=non_negative_int,
        metavar="FD",
        help="when the run ends, write the SHA-256 of every file it wrote to the open file "
        "descriptor FD, as the GitHub Actions step output results-sha256 (the action opens "
        "FD on $GITHUB_OUTPUT and checks the files against it before uploading them)",
    )
    run.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one un-timed profiled pass per side after the rounds, for the kernel diff "
        "(default: the suite's profile setting)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    run.set_defaults(run=run_bench)
    report = verbs.add_parser(
        "report",
        help="judge every results file of a folder and print the overall verdict",
        description="Compare each results file that `bench run --out` wrote into DIR (as `perfbot "
        "compare` does, with its defaults) and print the worst verdict: regression, error, "
        "inconclusive, improvement or unchanged. A folder that `perfbot bisect --artifact` "
        "wrote (it holds bisect.json) is read as the App reads it, and the bisection's status "
        "is printed: confirmed, likely, not_confirmed, not_reproduced or error. The action "
        "uses it for its outputs.",
    )
    report.add_argument("folder", metavar="DIR", help="the folder of the results files")
    report.add_argument(
        "--markdown",
        metavar="FILE",
        help="also write every suite's comparison (or the bisection's report) as Markdown to FILE",
    )
    report.add_argument(
        "--good",
        metavar="SHA",
        help="a bisection's folder must be about this GOOD (default: the one its bisect.json names)",
    )
    report.add_argument("--bad", metavar="SHA", help="... and this BAD")
    report.add_argument("--suite", metavar="NAME", help="... and this suite")
    report.set_defaults(run=run_report)


def run_bench(args: argparse.Namespace) -> int:
    # The runner (GitPython, pydantic, the suites) is imported by the verbs that run: `bench report`,
    # the action's verdict, starts without it.
    from bot.runner import bench, scope
    from bot.runner.progress import Progress
    from bot.runner.suites.base import SuiteError

    # The action names where perfbot writes in its environment, not its command line, which every
    # process of the machine can read; and no benchmark may read perfbot's environment or memory.
    scope.hide_from_benchmarks()
    summary = args.summary or os.environ.get("PERFBOT_BENCH_SUMMARY") or os.environ.get("GITHUB_STEP_SUMMARY")
    out = args.out or os.environ.get("PERFBOT_BENCH_OUT") or "results.json"
    options = bench.BenchOptions(
        base=args.base,
        head=args.head,
        suites=args.suites or [],
        out=Path(out),
        measure=measure_options.from_args(args),
        aa=args.aa,
        stop_on_failure=args.stop_on_failure,
        repo_name=args.repo_name or os.environ.get("GITHUB_REPOSITORY"),
        summary_path=Path(summary) if summary else None,
        profile=args.profile,
    )
    try:
        config = bench_config(args.config, options.measure.repo, options.base)
        stop_on_sigterm()
        try:
            outcomes = bench.run(options, config.bench, Progress(enabled=not args.quiet))
        except (bench.BenchError, SuiteError) as error:
            raise UsageError(str(error)) from None
        return report(outcomes)
    finally:
        if args.github_output_fd is not None:
            record_digests(args.github_output_fd, options)


def record_digests(fd: int, options: bench.BenchOptions) -> None:
    """The SHA-256 of every file this run wrote into the results file's folder, as a step output
    (``sha256sum`` lines, so that the action checks them with ``sha256sum --check``): the results
    files from the bytes written, the rounds' summary as it stands now that no benchmark runs."""
    folder = options.out.parent
    digests = {path.name: digest for path, digest in options.written.items() if path.parent == folder}
    summary = options.summary_path
    if summary is not None and summary.parent == folder and summary.is_file():
        digests[summary.name] = hashlib.sha256(summary.read_bytes()).hexdigest()
    write_digests(fd, digests)


def write_digests(fd: int, digests: dict[str, str]) -> None:
    """``digests`` (SHA-256 by file name) as the step output results-sha256, in ``sha256sum`` lines,
    at a delimiter no file name can hold."""
    delimiter = f"perfbot-{secrets.token_hex(16)}"
    lines = [
        f"results-sha256<<{delimiter}",
        *(f"{digests[name]}  {name}" for name in sorted(digests)),
        delimiter,
        "",
    ]
    try:
        os.write(fd, "\n".join(lines).encode())
    except OSError as error:
        raise UsageError(f"--github-output-fd {fd}: cannot write ({error.strerror})") from None


def run_report(args: argparse.Namespace) -> int:
    # Judging imports SciPy (about a second): only `bench report` needs it, not `bench run`'s start.
    from bot.runner import bisect_artifact
    from bot.runner import report as results_report

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder of results files")
    bisection = args.good or args.bad or args.suite or bisect_artifact.is_bisect_folder(folder)
    if bisection:
        verdict, markdown = bisect_artifact.read_folder(
            folder, good=args.good, bad=args.bad, suite=args.suite
        )
    else:
        found = results_report.report(folder)
        verdict, markdown = found.verdict, found.markdown
    if args.markdown:
        Path(args.markdown).write_text(markdown, encoding="utf-8")
    print(verdict)
    return 0


def bench_config(name: str | None, repo_path: Path, base: str) -> RepoConfig:
    """``--config``, else the config committed at the ``base`` revision: never the head's, so that the
    change under test cannot change how it is benchmarked (docs/configuration.md)."""
    if name is not None:
        return load_config(name)
    from bot.adapters.git_repo import GitRepo
    from bot.core.config.source import ConfigSource

    repo = GitRepo.open(repo_path)
    source = ConfigSource.at_revision(repo.resolve(base))
    return load_config(None, repo.config_text(source), source)


def report(outcomes: list[bench.SuiteOutcome]) -> int:
    """One line per suite on standard error; exit 0 only if every round of every suite was measured."""
    status = 0
    for o in outcomes:
        line = f"perfbot: {o.suite}: {o.ok_rounds} round(s) measured, {o.failed_rounds} failed, {o.status}"
        if o.error:
            line += f" ({o.error})"
        print(f"{line}; results in {o.path}", file=sys.stderr)
        if o.failed_rounds or o.status != "complete":
            status = 1
    return status
