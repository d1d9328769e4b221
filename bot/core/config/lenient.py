"""An invalid repository config, read for a caller that must go on (the review of a pull request,
the watch of the default branch): every valid key is kept, each invalid one is left out (so its
default applies), and the runs the bot would start on its own on the GPU runners are held until
the file is fixed.

Why both: a typo must not undo what the valid part says (`risk.profile`, `auto: never`, `budget: 0`
stay in force), and a key left out must not spend either: a misspelt `on_merge: nevr` would
otherwise fall back to its default, `high`. So while the config has a problem, `bench.dispatch.auto`,
`on_merge` and `schedule` read `never` and `bench.watch.bisect` reads false, whatever the file asks;
a `/bench` a person writes still runs (it never draws on the budget, and says the config's problem).
An unknown key close to a known one is named with a "did you mean" (`schema.describe`).
"""

from __future__ import annotations

import copy
import typing
from typing import Any

from pydantic import ValidationError

from bot.core.config.schema import ConfigError, RepoConfig, describe

_KEY = "[key]"
# Each pass leaves out one node; a file has far fewer problems than this.
_MAX_PASSES = 100


class Lenient(typing.NamedTuple):
    """The config in force, and the problems of the file (empty: it was valid)."""

    config: RepoConfig
    problems: list[str]


def salvage(data: dict[str, Any]) -> Lenient:
    """``data`` (a parsed YAML mapping) as a config: valid as it is, or with every invalid key left
    out and the automatic runs held (the module's docstring says why)."""
    try:
        return Lenient(RepoConfig.model_validate(data), [])
    except ValidationError as error:
        errors = error.errors()
    problems = [describe(e, data, guess=True) for e in errors]
    kept = copy.deepcopy(data)
    for _ in range(_MAX_PASSES):
        # One node a pass: dropping an item of a list moves the items after it, which the other
        # errors' locations still name by their old index.
        if not _drop(kept, errors[0]["loc"]):
            break
        try:
            config = RepoConfig.model_validate(kept)
        except ValidationError as error:
            # What is left to drop; the problems are the file's, named once by the first pass.
            errors = error.errors()
            continue
        return Lenient(held(config), problems)
    return Lenient(held(RepoConfig()), problems)


def held(config: RepoConfig) -> RepoConfig:
    """``config`` with every run the bot starts on its own turned off."""
    bench = config.bench
    dispatch = bench.dispatch.model_copy(update={"auto": "never", "on_merge": "never", "schedule": "never"})
    watch = bench.watch.model_copy(update={"bisect": False})
    bench = bench.model_copy(update={"dispatch": dispatch, "watch": watch})
    return config.model_copy(update={"bench": bench})


# The problems a pull request's note names one by one; a file with more says how many more.
LINE_PROBLEMS = 5


def problem_line(error: ConfigError) -> str:
    """The one line a pull request shows for a config read this way: every problem (a maintainer
    with two typos learns of both on one push), up to `LINE_PROBLEMS`."""
    named = "; ".join(error.problems[:LINE_PROBLEMS])
    more = len(error.problems) - LINE_PROBLEMS
    return (
        f"{error.source}: {named}" + (f" (and {more} more)" if more > 0 else "") + " — its valid keys "
        "are in force, the invalid ones are left out, and the runs perfbot starts on its own "
        "(bench.dispatch.auto, on_merge, schedule, bench.watch.bisect) are off until it is fixed"
    )


def _drop(data: dict[str, Any], loc: tuple[int | str, ...]) -> bool:
    """Leave out the node of ``data`` that ``loc`` names (its value's default then applies); where
    that node is missing (a required key, say), its parent. False when only the whole file would go."""
    path = _data_path(loc, data)
    while path:
        parent: Any = data
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        if isinstance(parent, dict) and last in parent:
            del parent[last]
            return True
        if isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
            del parent[last]
            return True
        path = path[:-1]
    return False


def _data_path(loc: tuple[int | str, ...], data: object) -> list[int | str]:
    """``loc`` as keys and indexes of ``data`` (without the models' steps: a suite's kind tag, the
    ``[key]`` mark), stopping where ``data`` ends."""
    path: list[int | str] = []
    node: object = data
    tag_skipped = False
    for item in loc:
        if item == _KEY:
            continue
        if isinstance(node, dict) and not tag_skipped and node.get("kind") == item:
            tag_skipped = True
            continue
        tag_skipped = False
        path.append(item)
        if isinstance(node, dict):
            node = node.get(item)
        elif isinstance(node, list) and isinstance(item, int) and 0 <= item < len(node):
            node = node[item]
        else:
            break
    return path
