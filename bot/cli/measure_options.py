"""The options `perfbot bench run` and `perfbot bisect` share (asv's `common_args` is the model):
which repository, how many rounds and how long each may take, the `command` suite's command, the
config, a dirty work tree, the engine's interpreter. One definition, so that the two verbs never
drift apart in names, types or defaults; `from_args` reads them into the one `MeasureOptions` both
verbs' options hold (the config is read by the verbs themselves)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from bot.runner.options import MeasureOptions


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # float() takes nan and inf; no count of seconds is either
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text}")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def add(parser: argparse.ArgumentParser, *, config_from: str, runs: str = "side") -> None:
    """Add the shared options; ``config_from``: where the config is read by default (a revision's
    name), ``runs``: what one count of rounds is per ('side', or 'side and run' for bisect)."""
    parser.add_argument("--repo", default=".", metavar="PATH", help="the git repository (default: .)")
    parser.add_argument(
        "--rounds",
        type=positive_int,
        metavar="N",
        help=f"counted rounds per {runs} (default: bench.rounds, else 5)",
    )
    parser.add_argument(
        "--warmup", type=non_negative_int, metavar="N", help="uncounted warm-up rounds per side"
    )
    parser.add_argument(
        "--max-rounds",
        type=positive_int,
        metavar="N",
        help="keep adding rounds while inconclusive, up to N per side (default: --rounds)",
    )
    parser.add_argument("--timeout", type=positive_float, metavar="S", help="seconds one round may take")
    parser.add_argument(
        "--config", metavar="FILE", help=f"config (YAML); default: the one committed at {config_from}"
    )
    parser.add_argument("--command", metavar="CMD", help="the command of the built-in 'command' suite")
    parser.add_argument("--allow-dirty", action="store_true", help="run even if the work tree has changes")
    parser.add_argument(
        "--python",
        metavar="PATH",
        help="the engine's interpreter, which the suites run and the fingerprint asks for "
        "versions (default: bench.python, else python3 on PATH)",
    )


def from_args(args: argparse.Namespace) -> MeasureOptions:
    """The shared options as `add` parsed them."""
    return MeasureOptions(
        repo=Path(args.repo),
        rounds=args.rounds,
        warmup=args.warmup,
        max_rounds=args.max_rounds,
        timeout=args.timeout,
        command=args.command,
        allow_dirty=args.allow_dirty,
        python=args.python,
    )
