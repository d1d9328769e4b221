"""One registry of suite kinds: the config's union of suites, the built-in suites, the words of the
metrics and the wording of a wrong kind all come from the kinds' own modules."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Literal

import pytest

from bot.core.bench import contract
from bot.core.config import schema, suite_kinds
from bot.core.config.schema import ConfigError
from bot.core.config.suite_kinds.base import (
    KINDS,
    Metric,
    MetricDeclaration,
    MetricRole,
    SuiteKind,
    SuiteOptions,
)
from bot.core.config.suite_kinds.verify_step import VerifyStep, VerifyStepSuite


@pytest.fixture
def registry():
    """The registry as it is, again after the test registered kinds of its own."""
    kept = dict(KINDS)
    yield KINDS
    KINDS.clear()
    KINDS.update(kept)


def register(name: str, metrics: dict[str, Metric] | None = None) -> type[SuiteKind]:
    """A kind called ``name``, registered as a module of the package would register it."""
    options = type(f"Options_{name}", (SuiteOptions,), {"__annotations__": {"kind": Literal[name]}})
    return type(f"Kind_{name}", (SuiteKind,), {"options": options, "metrics": metrics or {}}, name=name)


def time_metric(label: str, part=None) -> Metric:
    return Metric(MetricDeclaration(unit="ms", better="lower"), MetricRole(label, "time", "a time", part))


FOLDER = Path(suite_kinds.__file__).parent


def test_every_module_of_the_folder_is_one_kind_named_after_it_or_says_it_registers_none():
    """The kinds are the modules: adding one adds a kind, and no list here needs to learn of it.
    A module that registers none (shared options, shared metrics) says so in its docstring."""
    found = set()
    for path in sorted(FOLDER.glob("*.py")):
        if path.stem == "__init__":
            continue
        module = importlib.import_module(f"{suite_kinds.__name__}.{path.stem}")
        registered = [name for name, kind in KINDS.items() if kind.__module__ == module.__name__]
        if registered:
            assert registered == [path.stem.replace("_", "-")], path
            found.update(registered)
        else:
            assert "registers no kind" in " ".join((module.__doc__ or "").split()), path
    assert found == set(suite_kinds.names()) and len(found) >= 3


def test_the_configs_suites_are_one_of_the_registered_kinds_each():
    suites = schema.schema()["$defs"]["BenchConfig"]["properties"]["suites"]["patternProperties"]
    [union] = suites.values()
    mapping = union["discriminator"]["mapping"]
    assert set(mapping) == set(suite_kinds.names())
    for name in suite_kinds.names():
        assert mapping[name] == f"#/$defs/{KINDS[name].options.__name__}"
    loaded = schema.load("bench: {suites: {a: {kind: verify-step}, b: {kind: command, command: x}}}")
    assert type(loaded.bench.suites["a"]) is VerifyStepSuite


def test_a_wrong_or_missing_kind_is_answered_with_the_registered_kinds(registry):
    register("zz-new")  # registered after the config's union was built: only the wording knows it
    with pytest.raises(ConfigError) as refused:
        schema.load("bench: {suites: {a: {kind: nope}, b: {}}}")
    kinds = ", ".join(repr(name) for name in sorted(suite_kinds.names()))
    assert kinds.endswith("'zz-new'")
    assert refused.value.problems == [
        f"bench.suites.a.kind: 'nope' is not a suite kind (expected one of {kinds})",
        f"bench.suites.b: missing 'kind' (one of {kinds})",
    ]


def test_the_built_in_suites_of_the_dispatch_contract_are_the_registrys():
    assert contract.BUILT_IN_SUITES == suite_kinds.built_in() == ("command", "sglang-eagle3", "verify-step")
    assert contract.DEFAULT_SUITE in suite_kinds.built_in()


def test_a_built_in_suite_runs_with_its_kinds_defaults_or_says_what_it_needs():
    assert KINDS["verify-step"].default_options() == VerifyStepSuite(kind="verify-step")
    assert KINDS["command"].default_options() is None
    assert KINDS["command"].default_options("make bench").command == "make bench"
    assert KINDS["command"].needs() == "--command CMD or bench.suites.command.command in the config"
    assert KINDS["sglang-eagle3"].default_options() is None
    assert (
        KINDS["sglang-eagle3"].needs()
        == "bench.suites.sglang-eagle3 in the config (model_path, draft_model_path)"
    )


def test_a_kind_is_registered_once_under_the_tag_of_its_options(registry):
    register("zz-once")
    with pytest.raises(TypeError, match="'zz-once' is registered twice"):
        register("zz-once")
    mislabelled = type("Options", (SuiteOptions,), {"__annotations__": {"kind": Literal["other"]}})
    with pytest.raises(TypeError, match=r"'zz-tag': its options need kind: Literal\['zz-tag'\]"):
        type("Kind", (SuiteKind,), {"options": mislabelled}, name="zz-tag")
    assert "zz-tag" not in KINDS


def test_a_results_file_declares_what_the_kind_reports_and_the_words_keep_what_it_reported_before():
    declared = VerifyStep.declarations()
    assert "verify_ms" not in declared and "allreduce_us" not in declared
    assert declared["cycle_ms"] == MetricDeclaration(unit="ms", better="lower", role="headline")
    roles = suite_kinds.metric_roles()
    assert roles["verify_ms"].label == "the EAGLE-3 verify step"
    assert roles["allreduce_us"].part == "communication"


def test_a_metric_name_means_one_thing_whichever_kind_reports_it(registry):
    register("zz-a", {"x_ms": time_metric("one thing")})
    register("zz-b", {"x_ms": time_metric("one thing")})
    assert suite_kinds.metric_roles()["x_ms"].label == "one thing"
    register("zz-c", {"x_ms": time_metric("another")})
    with pytest.raises(TypeError, match="metric 'x_ms' means one thing in zz-a and another in zz-c"):
        suite_kinds.metric_roles()


def test_a_quantity_the_speculation_explanation_reads_has_one_name(registry):
    register("zz-cycle", {"other_cycle_ms": time_metric("a cycle", "cycle")})
    with pytest.raises(
        TypeError, match="the cycle of speculation has more than one name: cycle_ms, other_cycle_ms"
    ):
        suite_kinds.metric_roles()
