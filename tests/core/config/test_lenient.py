"""An invalid repository config keeps its valid keys, leaves out the invalid ones, holds the runs
perfbot starts on its own, and names near-misses."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.config import lenient
from bot.core.config import source as config_source
from bot.core.config.schema import ConfigError, RepoConfig
from bot.core.config.source import ConfigSource

# The file: a maintainer switched GPU spending off, then misspelt one key.
SWITCHED_OFF_WITH_A_TYPO = """\
risk:
  profile: sglang
bench:
  timout: 600
  dispatch:
    auto: never
    on_merge: never
    budget: 0
"""


def automatic(config: RepoConfig) -> tuple:
    d = config.bench.dispatch
    return (d.auto, d.on_merge, d.schedule, config.bench.watch.bisect)


def test_one_misspelt_key_does_not_turn_spending_back_on():
    config, problem = config_source.read_or_defaults(
        SWITCHED_OFF_WITH_A_TYPO, ConfigSource.default_branch("main")
    )
    assert automatic(config) == ("never", "never", "never", False)
    assert config.bench.dispatch.budget == 0
    assert config.risk.profile == "sglang"  # not back to the defaults' profile
    assert problem is not None
    assert problem.startswith(".github/perfbot.yml@main: bench.timout: unknown key (did you mean 'timeout'?)")


def test_a_valid_config_is_not_held():
    text = "bench:\n  dispatch:\n    auto: medium\n    on_merge: low\n"
    config, problem = config_source.read_or_defaults(text, ConfigSource.default_branch("main"))
    assert problem is None and automatic(config) == ("medium", "low", "never", True)


def test_an_invalid_trigger_falls_to_never_not_to_its_default():
    data = yaml.safe_load("bench:\n  dispatch:\n    on_merge: nevr\n    auto: high\n")
    config, problems = lenient.salvage(data)
    assert automatic(config) == ("never", "never", "never", False)
    assert problems == [
        "bench.dispatch.on_merge: 'nevr' is not allowed (expected 'low', 'medium', 'high' or 'never')"
    ]


def test_invalid_items_of_a_list_are_left_out_and_the_others_kept():
    data = yaml.safe_load(
        """\
risk:
  rules:
    - {id: a, kind: path}
    - {id: b, kind: path, category: x, description: y, paths: ["a/*"]}
    - {id: c, kind: nope, category: x, description: y}
    - {id: d, kind: cold, category: x, description: y, paths: ["docs/*"]}
  thresholds: {low: 50, medium: 10}
  profle: vllm
bench:
  suites:
    quick: {kind: command, comand: x}
    kept: {kind: command, command: "bash bench.sh"}
"""
    )
    config, problems = lenient.salvage(data)
    assert [r.id for r in config.risk.rules] == ["b", "d"]
    assert config.risk.thresholds == RepoConfig().risk.thresholds
    assert set(config.bench.suites) == {"kept"}
    assert "risk.profle: unknown key (did you mean 'profile'?)" in problems
    assert "bench.suites.quick.comand: unknown key (did you mean 'command'?)" in problems
    assert "risk.thresholds: thresholds must satisfy low <= medium <= high" in problems


def test_a_guess_follows_the_models_into_a_suite_s_kind():
    _, problems = lenient.salvage({"bench": {"suites": {"q": {"kind": "hyperfine", "comand": "x"}}}})
    assert "bench.suites.q.comand: unknown key (did you mean 'command'?)" in problems


def test_an_unknown_key_far_from_every_known_one_has_no_guess():
    _, problems = lenient.salvage({"bench": {"zzzzqqq": 1}})
    assert problems == ["bench.zzzzqqq: unknown key"]


_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 2000), st.text(max_size=8))
_keys = st.sampled_from(["risk", "bench", "dispatch", "auto", "on_merge", "budget", "rules", "version", "x"])
_tree = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(_keys | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_keys, _tree, max_size=4))
def test_any_mapping_gives_a_config_that_never_runs_on_its_own_when_it_had_a_problem(data):
    config, problems = lenient.salvage(data)
    assert isinstance(config, RepoConfig)
    if problems:
        assert automatic(config) == ("never", "never", "never", False)


def test_the_line_names_every_problem_up_to_a_few_then_how_many_more():
    """Issue 36: a pull request named the first invalid key only ('and 1 more')."""
    two = ConfigError(
        "f.yml@main", ["bench.timout: unknown key (did you mean 'timeout'?)", "risk.x: unknown key"]
    )
    line = lenient.problem_line(two)
    assert line.startswith(
        "f.yml@main: bench.timout: unknown key (did you mean 'timeout'?); risk.x: unknown key — "
    )
    assert "more)" not in line and line.endswith("are off until it is fixed")
    many = lenient.problem_line(ConfigError("f.yml", [f"k{i}: unknown key" for i in range(8)]))
    assert "k4: unknown key (and 3 more) — " in many and "k5" not in many
