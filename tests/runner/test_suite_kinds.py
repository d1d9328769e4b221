"""The runner's half of the suite kinds: one runner per kind the core registers, no more, no fewer;
each built-in suite is made from its kind's defaults and reports its kind's metrics."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.core.config import suite_kinds
from bot.core.config.schema import BenchConfig
from bot.runner.suites import RUNNERS, SuiteError, make_suite
from bot.runner.suites.command import CommandBench

ROOT = Path(__file__).resolve().parents[2]


def test_the_runner_and_the_core_know_exactly_the_same_kinds():
    assert set(RUNNERS) == set(suite_kinds.names())
    for name, runner in RUNNERS.items():
        assert runner.KIND is suite_kinds.get(name)


def test_each_kind_is_one_module_of_the_core_and_one_of_the_runner():
    for name in suite_kinds.names():
        module = name.replace("-", "_")
        assert sys.modules[suite_kinds.KINDS[name].__module__].__file__ == str(
            ROOT / "bot" / "core" / "config" / "suite_kinds" / f"{module}.py"
        )
        assert sys.modules[RUNNERS[name].__module__].__file__ == str(
            ROOT / "bot" / "runner" / "suites" / f"{module}.py"
        )


def test_a_runner_runs_a_kind_the_core_knows_and_only_one_runner_runs_it():
    with pytest.raises(
        TypeError, match="runs suite kind 'zz-nope', which bot.core.config.suite_kinds does not know"
    ):
        type("Nope", (CommandBench,), {}, kind="zz-nope")
    with pytest.raises(TypeError, match="suite kind 'command' has two runners"):
        type("Again", (CommandBench,), {}, kind="command")
    assert RUNNERS["command"] is CommandBench


@pytest.mark.parametrize("name", suite_kinds.built_in())
def test_a_built_in_suite_is_its_kinds_runner_with_its_kinds_metrics_or_says_what_it_needs(name):
    kind = suite_kinds.get(name)
    if kind.default_options() is None:
        with pytest.raises(SuiteError) as refused:
            make_suite(name, BenchConfig())
        assert str(refused.value) == f"suite '{name}' needs {kind.needs()}"
        return
    suite = make_suite(name, BenchConfig(), python="/engine/python")
    assert type(suite) is RUNNERS[name] and suite.python == "/engine/python"
    assert suite.metrics == kind.declarations()


def test_a_suite_of_no_built_in_name_and_no_entry_is_unknown():
    with pytest.raises(
        SuiteError, match=r"^unknown suite 'nope' \(known: command, sglang-eagle3, verify-step\)$"
    ):
        make_suite("nope", BenchConfig())
