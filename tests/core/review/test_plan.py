"""The review plan: what a PR's diff under the default branch's config makes the bot publish."""

from __future__ import annotations

import pytest

from bot.core.config.schema import ConfigError, RepoConfig
from bot.core.config.schema import load as load_config
from bot.core.pulls import PullInfo
from bot.core.render.comment import MARKER
from bot.core.review import plan as review_plan
from bot.core.review import sticky
from bot.core.review.plan import CHECK_NAME, LABEL_PREFIX, PullFacts, assess, plan
from bot.core.risk import ruleset
from tests.service import diffs

URL, SHA = "https://github.com/octo/engine/pull/7", "a" * 40


def facts(diff: str, config: str | None = diffs.BASE_CONFIG, error: str | None = None) -> PullFacts:
    loaded = load_config(config, "test") if config else RepoConfig()
    return PullFacts(
        html_url=URL, head_sha=SHA, default_branch="main", diff=diff, config=loaded, config_error=error
    )


@pytest.mark.parametrize(
    "diff,level,conclusion,label",
    [
        (diffs.HIGH, "high", "neutral", "perf-risk: high"),
        (diffs.MEDIUM, "medium", "neutral", "perf-risk: medium"),
        (diffs.COLD, "none", "success", None),
    ],
)
def test_the_level_decides_the_check_and_the_label(diff, level, conclusion, label):
    planned = plan(facts(diff))
    assert (planned.level, planned.check.conclusion, planned.label.wanted) == (level, conclusion, label)
    assert planned.label.prefix == LABEL_PREFIX
    assert (planned.check.name, planned.check.head_sha, planned.head_sha) == (CHECK_NAME, SHA, SHA)
    assert planned.check.title == f"Performance risk: {level} ({planned.score}/100)"


def test_the_review_is_rendered_once_for_the_comment_and_the_check():
    planned = plan(facts(diffs.HIGH))
    comment = sticky.compose(planned.blocks, None, planned.wants_comment)
    assert comment.marker == MARKER and comment.create
    assert comment.body == f"{MARKER}\n{planned.check.summary}"
    assert f"{URL}/files#diff-" in planned.check.summary and SHA[:12] in planned.check.summary


def test_a_config_that_failed_to_load_is_reported_and_the_defaults_are_used():
    planned = plan(facts(diffs.MEDIUM, config=None, error=".github/perfbot.yml@main: risk: unknown key"))
    assert "**Config problem:** .github/perfbot.yml@main: risk: unknown key" in planned.check.summary
    assert planned.wants_comment, "a config problem is news enough for a comment"


def test_a_config_naming_an_unknown_rule_is_reported_and_scored_with_the_defaults():
    broken = load_config("risk:\n  disable: [no.such-rule]\n", "test")
    broken_one = assess(
        PullFacts(html_url=URL, head_sha=SHA, default_branch="main", diff=diffs.MEDIUM, config=broken)
    )
    defaults = assess(
        PullFacts(html_url=URL, head_sha=SHA, default_branch="main", diff=diffs.MEDIUM, config=RepoConfig())
    )
    problem = broken_one.config_problem
    assert problem and "no.such-rule" in problem and defaults.config_problem is None
    assert (broken_one.report.score, broken_one.level) == (defaults.report.score, defaults.level)
    with pytest.raises(ConfigError):
        ruleset.build(broken, [])


def test_the_default_branch_config_changes_the_score():
    assert plan(facts(diffs.MEDIUM, config=diffs.CONFIG_LOWERING)).level == "low"


def test_the_plan_renders_the_assessment_it_is_given_and_scores_nothing_again(monkeypatch):
    """The push flow scores the diff once in its snapshot (asking the author depends on the risk)."""
    given = facts(diffs.HIGH)
    assessed, expected = assess(given), plan(given)
    monkeypatch.setattr(review_plan, "score", lambda *_: pytest.fail("the diff was scored again"))
    assert plan(given, assessed) == expected and assessed.level == "high"


@pytest.mark.parametrize(
    "is_open,draft,draft_event,expected",
    [
        (True, False, False, True),
        (False, False, False, False),
        (True, True, False, False),
        (True, False, True, False),
    ],
)
def test_only_an_open_ready_head_is_reviewed(is_open, draft, draft_event, expected):
    pull = PullInfo(
        repo="o/r",
        number=7,
        open=is_open,
        draft=draft,
        head_sha=SHA,
        base_sha="b" * 40,
        head_repo="o/r",
        author="a",
        html_url=URL,
    )
    assert review_plan.reviewed(pull, draft_event) is expected
