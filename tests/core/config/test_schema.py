"""Repository config: validation messages name the key path; profiles merge with it."""

from __future__ import annotations

import dataclasses
import json
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core import vocabulary
from bot.core.config import rules as plain
from bot.core.config import schema as config
from bot.core.config.schema import ConfigError
from bot.core.risk import profiles, ruleset


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        config.load(text, "perfbot.yml")
    return caught.value.problems


def test_an_empty_file_is_the_defaults():
    assert config.load("") == config.RepoConfig()


def test_a_full_config_loads():
    loaded = config.load("""
version: 1
risk:
  profile: vllm
  thresholds: {low: 5, medium: 40, high: 70}
  rules:
    - id: mine.loop
      kind: token
      category: custom
      weight: 20
      description: our busy loop
      pattern: '(?i)spin_wait\\('
      paths: ["csrc/**"]
  disable: [cold.examples]
  weights: {path.sampling: 30}
""")
    assert loaded.risk.profile == "vllm" and loaded.risk.thresholds.high == 70
    assert loaded.risk.rules[0].paths == ("csrc/**",)


def test_errors_name_the_key_path_and_what_was_expected():
    found = problems(
        "risk:\n  rules:\n    - {id: a, kind: path, category: c, weight: 101, description: d, paths: [x]}\n"
    )
    assert found == ["risk.rules[0].weight: Input should be less than or equal to 100"]


def test_unknown_keys_are_named():
    assert problems("risk: {profle: vllm}") == ["risk.profle: unknown key"]


def test_every_problem_is_listed():
    found = problems("version: 2\nrisk: {profile: nope, thresholds: {low: 50, medium: 10}}")
    assert len(found) == 3
    assert found[0].startswith("version:") and found[1].startswith("risk.profile:")
    assert "low <= medium <= high" in found[2]


def test_a_regex_re2_cannot_run_is_refused_with_the_reason():
    found = problems(
        "risk:\n  rules:\n    - {id: a, kind: token, category: c, description: d, pattern: '(?<!x)y'}\n"
    )
    assert found[0].startswith("risk.rules[0].pattern: not a valid RE2 regular expression")


def test_a_rule_without_what_its_kind_needs_is_refused():
    assert "needs 'paths'" in problems("risk: {rules: [{id: a, kind: path, category: c, description: d}]}")[0]


def test_broken_yaml_says_where():
    found = problems("risk:\n  profile: [unclosed\n")
    assert found[0].startswith("line ") and "not valid YAML" in found[0]


def test_a_top_level_that_is_not_a_mapping_is_refused():
    assert "mapping" in problems("- a\n- b\n")[0]


def test_the_error_message_is_one_line_with_a_count():
    with pytest.raises(ConfigError) as caught:
        config.load("version: 3\nrisk: {profile: x}", "cfg.yml")
    assert str(caught.value) == "cfg.yml: version: 3 is not allowed (expected 1) (and 1 more)"


def test_unknown_rule_ids_in_disable_and_weights_are_errors():
    loaded = config.load("risk: {disable: [no.such], weights: {also.missing: 3}}")
    with pytest.raises(ConfigError) as caught:
        ruleset.merged_rules(loaded, "generic")
    assert caught.value.problems == [
        "risk.disable[0]: unknown rule id 'no.such'",
        "risk.weights.also.missing: unknown rule id 'also.missing'",
    ]


def test_a_repository_rule_with_a_profile_id_replaces_it():
    loaded = config.load(
        "risk:\n  rules:\n    - {id: path.pynccl, kind: path, category: c, weight: 1, "
        "description: d, paths: [nccl.py]}\n"
    )
    merged = {r.id: r for r in ruleset.merged_rules(loaded, "sglang")}
    assert merged["path.pynccl"].weight == 1 and len(merged) == len(profiles.PROFILES["sglang"])


def test_the_schema_is_json_and_describes_rules():
    text = json.dumps(config.schema())
    assert '"Rule"' in text and '"risk"' in text


def test_every_builtin_profile_compiles():
    for name in profiles.PROFILES:
        rules = ruleset.build(config.RepoConfig(risk=config.RiskConfig(profile=name)))
        assert rules.token_regex is not None and rules.profile == name


@pytest.mark.parametrize("name", sorted(profiles.PROFILES))
def test_every_builtin_rule_is_one_the_schema_accepts_as_it_is(name):
    # The profiles are plain data, never validated at run time: this is where they are.
    for rule in profiles.PROFILES[name]:
        assert config.Rule.model_validate(dataclasses.asdict(rule)).plain() == rule, rule.id


@pytest.mark.parametrize(
    ("data", "model"), [(plain.Rule, config.Rule), (plain.Thresholds, config.Thresholds)]
)
def test_the_plain_rules_and_thresholds_have_the_schemas_fields_and_defaults(data, model):
    fields = dataclasses.fields(data)
    assert [f.name for f in fields] == list(model.model_fields)
    for f in fields:
        declared = model.model_fields[f.name]
        assert declared.is_required() if f.default is dataclasses.MISSING else declared.default == f.default


def test_the_default_rules_are_those_of_the_default_config():
    paths = ["python/sglang/srt/x.py"]
    assert ruleset.build(None, paths) == ruleset.build(config.RepoConfig(), paths)
    assert ruleset.build(None, paths, "vllm") == ruleset.build(
        config.RepoConfig(risk=config.RiskConfig(profile="vllm"))
    )


def test_the_profile_is_detected_from_the_layout():
    assert profiles.detect(["python/sglang/srt/x.py"]) == "sglang"
    assert profiles.detect(["README.md", "vllm/worker/x.py"]) == "vllm"
    assert profiles.detect(["src/a.py"]) == "generic"


@given(st.text(max_size=300))
@settings(max_examples=200)
def test_any_text_either_loads_or_raises_config_error(text):
    try:
        config.load(text)
    except ConfigError as error:
        assert error.problems and "\n" not in str(error)


def test_the_dispatch_section_has_defaults_and_says_what_is_wrong():
    dispatch = config.load("").bench.dispatch
    assert (dispatch.workflow, dispatch.auto, dispatch.on_merge, dispatch.schedule, dispatch.gate) == (
        "perfbot-bench.yml",
        "high",
        "high",
        "never",
        False,
    )
    assert (dispatch.cooldown.user, dispatch.cooldown.pr, dispatch.max_rounds) == (300, 300, 50)
    found = problems(
        "bench:\n  dispatch:\n    workflow: ../evil.yml\n    auto: extreme\n"
        "    cooldown: {user: -1}\n    max_rounds: 0\n"
    )
    assert [p.split(":")[0] for p in found] == [
        "bench.dispatch.workflow",
        "bench.dispatch.auto",
        "bench.dispatch.max_rounds",
        "bench.dispatch.cooldown.user",
    ]


def test_reaches_compares_risk_levels_and_never_reaches_nothing():
    assert config.reaches("high", "medium") and config.reaches("medium", "medium")
    assert not config.reaches("low", "medium") and not config.reaches("high", "never")


def test_reaches_is_the_vocabulary_s_order_with_never_reaching_nothing():
    """Every risk level against every trigger, against the rule as the schema once spelled it out."""

    def spelled_out(level, trigger):
        return trigger != "never" and config.LEVELS.index(level) >= config.LEVELS.index(trigger)

    triggers = get_args(config.TriggerLevel)
    assert set(triggers) == {*config.LEVELS[1:], "never"}
    for level in vocabulary.LEVELS:
        for trigger in triggers:
            assert config.reaches(level, trigger) == spelled_out(level, trigger), (level, trigger)


def test_the_budget_and_watch_keys_have_defaults_and_say_what_is_wrong():
    bench = config.load("").bench
    assert (bench.dispatch.budget, bench.dispatch.run_minutes) == (240, 5.0)
    assert (bench.watch.bisect, bench.watch.issue) == (True, False)
    assert config.load("bench:\n  dispatch: {budget: unlimited}\n").bench.dispatch.budget == "unlimited"
    assert config.load("bench:\n  dispatch: {budget: 0}\n").bench.dispatch.budget == 0
    found = problems(
        "bench:\n  dispatch:\n    budget: lots\n    run_minutes: 0\n"
        "  watch:\n    bisekt: true\n    issue: maybe\n"
    )
    assert [p.split(":")[0] for p in found] == [
        "bench.dispatch.budget",
        "bench.dispatch.run_minutes",
        "bench.watch.issue",
        "bench.watch.bisekt",
    ]
    assert "or 'unlimited', not 'lots'" in found[0]


@given(st.one_of(st.integers(), st.booleans(), st.text(max_size=12), st.floats(allow_nan=False)))
def test_a_budget_is_whole_minutes_or_unlimited_and_nothing_else(value):
    text = json.dumps({"bench": {"dispatch": {"budget": value}}})
    valid = value == "unlimited" or (type(value) is int and 0 <= value <= config.MAX_BUDGET_MINUTES)
    try:
        assert config.load(text).bench.dispatch.budget == value and valid
    except ConfigError as error:
        assert not valid and error.problems[0].startswith("bench.dispatch.budget: expected GPU minutes")
