"""`perfbot map`: a per-step map file from an engine's own torch-profiler trace (with Python stacks)
and the repository at the traced commit, for `perfbot score --map` and `perfbot triage --map`, and
for the results file a suite's profiled pass writes."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .common import UsageError

if TYPE_CHECKING:
    from bot.adapters.git_repo import GitRepo

HELP = "make a per-step map from a torch-profiler trace and the repository at the traced commit"


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "map",
        help=HELP,
        description="Make a per-step map (JSON) from a torch-profiler Chrome trace recorded with "
        "Python stacks (torch.profiler.profile(with_stack=True), an engine's --profile; .json or "
        ".json.gz) and the repository at the commit the trace ran: each Python call of the "
        "repository's code, its calls per profiled step and its share of the step's host time.",
    )
    parser.add_argument("trace", metavar="TRACE", help="the trace file (.json or .json.gz)")
    parser.add_argument(
        "--repo", required=True, metavar="PATH", help="a clone of the repository the trace ran"
    )
    parser.add_argument(
        "--commit",
        default="HEAD",
        metavar="REV",
        help="the commit the trace ran (default: the checkout's HEAD); its files name the calls",
    )
    parser.add_argument(
        "--suite", default="trace", help="the name the map gives what was profiled (default: trace)"
    )
    parser.add_argument(
        "--step", default="profiled step", help="what one step is, in the reasons (default: profiled step)"
    )
    parser.add_argument(
        "--output",
        "-o",
        default="-",
        metavar="FILE",
        help="where to write the map (default: - for standard output)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from bot.core import stepmap
    from bot.runner import trace_map
    from bot.runner.traces import TraceUnreadable

    repo = _open(args.repo)
    commit = repo.resolve(args.commit)
    for name, value, limit in (("--suite", args.suite, 100), ("--step", args.step, 100)):
        if not value.strip() or len(value) > limit or not value.isprintable():
            raise UsageError(f"{name}: 1-{limit} printable characters, got {value[:40]!r}")
    try:
        data = trace_map.read(Path(args.trace))
    except TraceUnreadable as error:
        raise UsageError(str(error)) from None
    if not trace_map.is_trace(data):
        raise UsageError(f"{args.trace}: not a Chrome trace (no traceEvents array)")
    resolve = trace_map.resolved(trace_map.file_names(data), lambda paths: repo.existing_paths(commit, paths))
    try:
        mapped = trace_map.build(
            data, resolve, lambda path: repo.show(commit, path), commit, args.step, args.suite
        )
    except stepmap.StepMapError as error:
        raise UsageError(f"{args.trace}: {error}") from None
    text = json.dumps(mapped.to_dict(), indent=1) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            Path(args.output).write_text(text)
        except OSError as error:
            raise UsageError(f"{args.output}: cannot write ({error.strerror})") from None
    print(
        f"perfbot: the map of {len(mapped.functions)} functions of the repository over "
        f"{mapped.steps} {args.step}{'s' if mapped.steps != 1 else ''} at {commit[:12]}"
        + ("" if args.output == "-" else f", written to {args.output}"),
        file=sys.stderr,
    )
    return 0


def _open(path: str) -> GitRepo:
    from bot.adapters.git_repo import GitRepo

    return GitRepo.open(path)
