"""What every verb shares: the user-error type and parser (from `parsing`), config and output helpers."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bot.core.config import CONFIG_PATH
from bot.core.config import source as config_source
from bot.core.config.source import WORK_TREE, ConfigSource
from bot.core.vocabulary import LEVELS

from .parsing import Parser as Parser  # re-exported: the verbs take both from here
from .parsing import UsageError

if TYPE_CHECKING:
    from bot.core.config.schema import RepoConfig

FORMATS = ("text", "json", "markdown")


def stop_on_sigterm() -> None:
    """Make SIGTERM (a cancelled CI job) stop a run as Ctrl-C does: the runner finishes its results
    file and ends what it started, and `perfbot` exits 130."""
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def read_input(name: str, limit: int) -> bytes:
    """Bytes of a file, or of standard input for '-', at most ``limit`` bytes."""
    if name == "-":
        if sys.stdin.isatty():
            raise UsageError("no diff given: name a file or pipe a diff to standard input")
        data = sys.stdin.buffer.read(limit + 1)
        where = "standard input"
    else:
        path = Path(name)
        try:
            with path.open("rb") as handle:
                data = handle.read(limit + 1)
        except IsADirectoryError:
            raise UsageError(f"{name}: is a directory, not a diff file") from None
        except OSError as error:
            raise UsageError(f"{name}: cannot read ({error.strerror})") from None
        where = name
    if len(data) > limit:
        raise UsageError(f"{where}: larger than the {limit // 2**20} MiB limit (see --max-mib)")
    return data


def load_config(name: str | None, text: str | None = None, source: ConfigSource = WORK_TREE) -> RepoConfig:
    """The config from ``--config``, else the repository's ``text`` read from ``source``, else the
    defaults."""
    config = read_config(name, text, source)
    return config if config is not None else config_source.read(None, source)


def read_config(
    name: str | None, text: str | None = None, source: ConfigSource = WORK_TREE
) -> RepoConfig | None:
    """As `load_config`, but None when there is no config to read: the risk verbs then build the
    default rules without loading the schema (pydantic), a good part of their start-up."""
    if name is not None:
        try:
            data = Path(name).read_bytes()
        except OSError as error:
            raise UsageError(f"{name}: cannot read ({error.strerror})") from None
        from bot.core.config import schema

        return schema.load(data, name)
    return config_source.read(text, source) if text is not None else None


def with_profile(config: RepoConfig, profile: str | None) -> RepoConfig:
    if profile is None:
        return config
    risk = config.risk.model_copy(update={"profile": profile})
    return config.model_copy(update={"risk": risk})


def add_risk_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"repository config (YAML); default: the repository's {CONFIG_PATH} when --repo names one",
    )
    parser.add_argument(
        "--profile",
        choices=("auto", "generic", "sglang", "vllm"),
        help="built-in rule profile (default: the config's, else auto)",
    )
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument(
        "--fail-on",
        choices=LEVELS[1:],
        metavar="LEVEL",
        help="exit 1 when the risk level is at least LEVEL (low, medium, high)",
    )


def fails(level: str, fail_on: str | None) -> bool:
    return fail_on is not None and LEVELS.index(level) >= LEVELS.index(fail_on)


def emit(
    fmt: str, as_json: Callable[[], object], as_markdown: Callable[[], str], as_text: Callable[[], str]
) -> None:
    """Write a verb's result to standard output in the format asked for (``--format``)."""
    if fmt == "json":
        print_json(as_json())
    else:
        sys.stdout.write(as_markdown() if fmt == "markdown" else as_text())


def print_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def percentage(text: str) -> float:
    """An argparse type: a percentage from 0 (inclusive) to 100, a trailing % allowed."""
    value = _number(text)
    if not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"{text!r}: a percentage from 0 to 100 is expected")
    return value


def probability(text: str) -> float:
    """An argparse type: a significance level strictly between 0 and 1."""
    value = _number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a probability between 0 and 1 is expected")
    return value


def _number(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number") from None
    if value != value:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number")
    return value
