"""The suites `perfbot bench run` knows, by name: built-ins, and those a repository's config adds.

Each module of this package that defines a `Suite` subclass with a ``kind`` registers the runner's
half of that kind (`base.RUNNERS`); every module here is imported below, so that adding a module
adds the runner of its kind. The kinds themselves, their options and metrics, are the core's
(`bot.core.config.suite_kinds`); a kind that runs a standard tool has its runner derived from
`result_file.ResultFileBench`, which reads the tool's file with the format of the kind's name
(`bot.core.formats`).
"""

from __future__ import annotations

import importlib
import pkgutil

from bot.core.config import suite_kinds
from bot.core.config.schema import BenchConfig
from bot.core.config.suite_kinds.base import SuiteOptions

from .base import RUNNERS, Suite, SuiteError

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

BUILT_IN = suite_kinds.built_in()


def make_suite(name: str, bench: BenchConfig, command: str | None = None, python: str | None = None) -> Suite:
    """The suite called ``name``: the config's entry if it has one, else a built-in with defaults.

    ``python``: the engine's interpreter, for a suite whose config names none of its own.
    """
    config = bench.suites[name] if name in bench.suites else built_in_options(name, bench, command)
    suite = RUNNERS[config.kind](name, config)
    suite.python = suite.python or python
    suite.pass_env = tuple(bench.pass_env)
    return suite


def built_in_options(name: str, bench: BenchConfig, command: str | None) -> SuiteOptions:
    """The options of the built-in suite ``name`` where the config has no entry of that name (its
    kind's defaults); `SuiteError` where it is no built-in or needs options the config lacks.
    ``command``: ``--command``, for the `command` suite."""
    kind = suite_kinds.get(name)
    if kind is None or not kind.built_in:
        known = sorted({*BUILT_IN, *bench.suites})
        raise SuiteError(f"unknown suite '{name}' (known: {', '.join(known)})")
    options = kind.default_options(command)
    if options is None:
        raise SuiteError(f"suite '{name}' needs {kind.needs()}")
    return options
