"""The suites `perfbot bench run` knows, by name: built-ins, and those a repository's config adds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.core.config.schema import BenchConfig, CommandSuite, VerifyStepSuite

from .base import Suite, SuiteError
from .command import CommandBench
from .sglang_eagle3 import SglangEagle3Bench
from .verify_step import VerifyStepBench

BUILT_IN = ("verify-step", "sglang-eagle3", "command")
_ADAPTERS: dict[str, Callable[[str, Any], Suite]] = {
    "command": CommandBench, "verify-step": VerifyStepBench, "sglang-eagle3": SglangEagle3Bench
}


def make_suite(name: str, bench: BenchConfig, command: str | None = None, python: str | None = None) -> Suite:
    """The suite called ``name``: the config's entry if it has one, else a built-in with defaults.

    ``python``: the engine's interpreter, for a suite whose config names none of its own.
    """
    if name in bench.suites:
        config = bench.suites[name]
    elif name == "verify-step":
        config = VerifyStepSuite(kind="verify-step")
    elif name == "command" and command:
        config = CommandSuite(kind="command", command=command)
    elif name == "command":
        raise SuiteError("suite 'command' needs --command CMD or bench.suites.command.command in the config")
    elif name == "sglang-eagle3":
        raise SuiteError("suite 'sglang-eagle3' needs bench.suites.sglang-eagle3 in the config "
                         "(model_path, draft_model_path)")
    else:
        known = sorted({*BUILT_IN, *bench.suites})
        raise SuiteError(f"unknown suite '{name}' (known: {', '.join(known)})")
    suite = _ADAPTERS[config.kind](name, config)
    suite.python = suite.python or python
    suite.pass_env = tuple(bench.pass_env)
    return suite
