"""The runner's half of the suite kinds: one runner per kind the core registers, no more, no fewer;
each built-in suite is made from its kind's defaults and reports its kind's metrics."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from bot.core.config import suite_kinds
from bot.core.config.schema import BenchConfig
from bot.core.formats.base import FormatError
from bot.runner.suites import RUNNERS, SuiteError, make_suite
from bot.runner.suites.command import CommandBench
from bot.runner.suites.result_file import ResultFileBench

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ROOT / "bot" / "core" / "formats"
SAMPLES = ROOT / "tests" / "core" / "formats" / "outputs"


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


def test_a_tool_kind_is_three_modules_and_a_sample_of_the_tools_output():
    """The recipe of docs/bench.md ('Add a tool format'): a kind whose runner reads a tool's file
    has a format module of its name whose `parse` the runner reads with (checked on the sample),
    and a sample of the tool's own output in tests/core/formats/outputs that its README names;
    and every format module is some kind's. The kinds come from the registries, never a list."""
    tools = {name: runner for name, runner in RUNNERS.items() if issubclass(runner, ResultFileBench)}
    formats = {
        path.stem
        for path in FORMATS.glob("*.py")
        if hasattr(importlib.import_module(f"bot.core.formats.{path.stem}"), "parse")
    }
    assert formats == {name.replace("-", "_") for name in tools} and len(tools) >= 1
    readme = (SAMPLES / "README.md").read_text()
    for name in tools:
        module = name.replace("-", "_")
        parse = importlib.import_module(f"bot.core.formats.{module}").parse
        samples = sorted(p for p in SAMPLES.iterdir() if p.name.startswith(module) and p.suffix != ".md")
        assert samples and f"`{module}" in readme, (
            f"{name}: no sample of the tool's output, or not in README.md"
        )
        config = suite_kinds.get(name).options(kind=name, command="true")
        suite = make_suite("s", BenchConfig(suites={"s": config}))
        content = samples[0].read_text()
        try:
            expected = parse(content, "f")
        except FormatError as error:  # a sample of a failed run: the runner refuses it alike
            with pytest.raises(FormatError, match=re.escape(str(error))):
                suite.read(content, "f")
        else:
            assert suite.read(content, "f") == expected


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
