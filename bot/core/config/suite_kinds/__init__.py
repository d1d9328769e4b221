"""The suite kinds, one module each, and what the rest of perfbot reads of them.

Each module of this package that defines a `SuiteKind` subclass registers a kind: its options
model (`bot.core.config.schema` builds the config's union of suites from these), its metrics with
their units, directions and words (`bot.core.judge.speculation` takes its roles from them), and
whether a suite of its name is known without a config entry (`bot.core.bench.contract`). Every
module here is imported below, so that adding a module adds the kind; its runner half, which runs
a round and reads what it left, is a module of `bot.runner.suites` registered under the same name.
A kind that runs a standard tool (its options derived from `result_file.ResultFileSuite`) has a
third module of that name, the tool's format in `bot.core.formats`, which its runner half reads
the tool's file with. docs/bench.md ("Add a tool format") is the recipe; the tests derive the
kinds from these modules. A module here that registers no kind says so in its docstring.
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import KINDS, SINGLE_PARTS, MetricRole, SuiteKind, SuiteOptions

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def names() -> tuple[str, ...]:
    """Every kind's name, sorted."""
    return tuple(sorted(KINDS))


def get(name: str) -> type[SuiteKind] | None:
    return KINDS.get(name)


def options_models() -> tuple[type[SuiteOptions], ...]:
    """The options model of every kind, in the order of `names`."""
    return tuple(KINDS[name].options for name in names())


def built_in() -> tuple[str, ...]:
    """The suites known by name without a config entry: the kinds that are `SuiteKind.built_in`."""
    return tuple(name for name in names() if KINDS[name].built_in)


def metric_roles() -> dict[str, MetricRole]:
    """Every kind's metrics' words, by metric name (retired metrics too: old results files have
    them). A name two kinds report means one thing; so does a part the speculation explanation
    reads as one quantity (`SINGLE_PARTS`): `TypeError` where the kinds disagree."""
    roles: dict[str, MetricRole] = {}
    said: dict[str, str] = {}  # the kind that gave each name its role
    for kind in names():
        for metric, declared in KINDS[kind].metrics.items():
            known = roles.setdefault(metric, declared.role)
            if known != declared.role:
                raise TypeError(f"metric {metric!r} means one thing in {said[metric]} and another in {kind}")
            said.setdefault(metric, kind)
    for part in SINGLE_PARTS:
        named = [metric for metric, role in roles.items() if role.part == part]
        if len(named) > 1:
            raise TypeError(f"the {part} of speculation has more than one name: {', '.join(named)}")
    return roles
