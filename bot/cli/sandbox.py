"""`perfbot sandbox`: a development tool that shows the whole bot on this machine, with no GitHub:
the server on SQLite in a folder of its own, a local stand-in for GitHub, the sample engine's
repository with its history merged and benchmarked on the CPU, and a pull request for the bot to
review and `/bench` (`bot.sandbox.session`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .parsing import UsageError

DEFAULT_FOLDER = Path(".cache/perfbot-sandbox")


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "sandbox",
        help="try the whole bot on this machine, against a stand-in for GitHub",
        description="Start perfbot serve (SQLite files in --dir) against a local stand-in for GitHub, build "
        "the sample engine's repository, replay its history as merged pull requests (each "
        "merge benchmarked on this machine's CPU, which fills the dashboard), open a pull "
        "request for the bot to review, and print the addresses of its thread and of the "
        "dashboard; then wait for the watch's regression case of the merge that regressed (bisected "
        "by the sandbox's runner, its culprit named on its pull request) and print its page and "
        "the calibration's. Comment /bench on the thread to benchmark it. Ctrl-C (or SIGTERM, or closing the "
        "terminal) stops everything, its children included. A "
        "development tool: nothing leaves this machine.",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_FOLDER,
        metavar="FOLDER",
        help=f"the sandbox's folder, emptied at each start (default {DEFAULT_FOLDER})",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=8010, help="perfbot's port (default 8010: `make run` may hold 8000)"
    )
    parser.add_argument(
        "--github-port", type=int, default=None, help="the GitHub stand-in's port (default: --port + 1)"
    )
    parser.add_argument(
        "--parallel",
        type=int,
        default=None,
        metavar="N",
        help="benchmarks measured at once (default: 2 with 2 cores or more, else 1: each "
        "benchmark of the sample's suite keeps to one core)",
    )
    parser.add_argument(
        "--merge-rounds",
        type=int,
        default=3,
        metavar="N",
        help="rounds per side of each merge's benchmark (default 3, the fewest the statistics "
        "decide with, and up to 6 while more would decide: a merge that regressed opens a "
        "regression case, bisected and its culprit "
        "named, and the calibration page has outcomes; 1 or 2 is a quick mode that only fills "
        "the history's points)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from bot.sandbox.session import Options, Sandbox

    github_port = args.port + 1 if args.github_port is None else args.github_port
    for name, value in (("--port", args.port), ("--github-port", github_port)):
        if not 1 <= value <= 65535:
            raise UsageError(f"{name} must be from 1 to 65535")
    if github_port == args.port:
        raise UsageError("--github-port must differ from --port")
    parallel = args.parallel if args.parallel is not None else (2 if (os.cpu_count() or 1) >= 2 else 1)
    for name, value in (("--parallel", parallel), ("--merge-rounds", args.merge_rounds)):
        if not 1 <= value <= 50:
            raise UsageError(f"{name} must be from 1 to 50")
    options = Options(args.dir, args.host, args.port, github_port, parallel, args.merge_rounds)
    return Sandbox(options, say=_say).run()


def _say(line: str) -> None:
    print(line, flush=True)
    sys.stdout.flush()
