"""The pull_request risk review, run through the real router on the real store, with a fake GitHub."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.core.render.comment import MARKER
from bot.core.review import plan as reviewing
from bot.service.routes import ROUTER
from bot.service.services import Services
from tests.service import diffs
from tests.service.fakes import FakeGitHub, FakeGitHubFactory, FakeQueue

REPO, NUMBER, SHA = "octo/engine", 7, "a" * 40


def payload(
    action: str = "opened",
    *,
    sha: str = SHA,
    draft: bool = False,
    state: str = "open",
    changes: dict | None = None,
) -> dict:
    data = {
        "action": action,
        "installation": {"id": 42},
        "repository": {"full_name": REPO, "default_branch": "main"},
        "pull_request": {
            "number": NUMBER,
            "state": state,
            "draft": draft,
            "head": {"sha": sha},
            "html_url": f"https://github.com/{REPO}/pull/{NUMBER}",
            "title": "t",
        },
    }
    if changes is not None:
        data["changes"] = changes
    return data


@pytest.fixture
def github() -> FakeGitHub:
    fake = FakeGitHub()
    fake.heads[(REPO, NUMBER)] = SHA
    fake.diffs[(REPO, NUMBER)] = diffs.HIGH
    fake.files[(REPO, ".github/perfbot.yml", "main")] = diffs.BASE_CONFIG
    return fake


@pytest.fixture
def services(github, sqlite_store) -> Services:
    return Services(store=sqlite_store, github=FakeGitHubFactory(github), queue=FakeQueue())


def test_a_review_scores_its_diff_where_the_services_say(services, github):
    """The consumer process scores in a process of its own (`bot.adapters.scoring_process`)."""
    scored = []

    def assess(facts: reviewing.PullFacts) -> reviewing.Assessment:
        scored.append(facts.head_sha)
        return reviewing.assess(facts)

    ROUTER.dispatch("pull_request", payload("opened"), replace(services, assess=assess))
    assert scored == [SHA]
    assert github.comments[(REPO, NUMBER)]


@pytest.mark.parametrize("action", ["opened", "synchronize", "reopened", "ready_for_review"])
def test_each_reviewed_action_publishes_a_comment_a_check_and_a_label(action, services, github):
    ROUTER.dispatch("pull_request", payload(action), services)
    [body] = github.comments[(REPO, NUMBER)]
    assert body.startswith(MARKER) and "**high**" in body
    [(repo, check)] = github.checks
    assert (repo, check.name, check.head_sha, check.conclusion) == (REPO, "perfbot / risk", SHA, "neutral")
    assert github.labels[(REPO, NUMBER)] == {"perf-risk: high"}
    assert services.store.reviews.get(REPO, NUMBER).level == "high"
    assert set(services.github.installations) == {42}, "every handler of the delivery uses its installation"


def test_a_second_push_updates_the_one_sticky_comment(services, github):
    ROUTER.dispatch("pull_request", payload("opened"), services)
    github.heads[(REPO, NUMBER)] = "b" * 40
    github.diffs[(REPO, NUMBER)] = diffs.COLD
    ROUTER.dispatch("pull_request", payload("synchronize", sha="b" * 40), services)
    [body] = github.comments[(REPO, NUMBER)]
    assert "**none**" in body
    assert github.labels[(REPO, NUMBER)] == set()


def test_a_medium_risk_gets_the_medium_label(services, github):
    github.diffs[(REPO, NUMBER)] = diffs.MEDIUM
    ROUTER.dispatch("pull_request", payload(), services)
    assert github.labels[(REPO, NUMBER)] == {"perf-risk: medium"}


def test_low_risk_concludes_the_check_with_success(services, github):
    github.diffs[(REPO, NUMBER)] = diffs.COLD
    ROUTER.dispatch("pull_request", payload(), services)
    assert github.checks[0][1].conclusion == "success"


def test_the_config_is_read_from_the_default_branch_never_the_head(services, github):
    ROUTER.dispatch("pull_request", payload(), services)
    assert github.file_reads == [(REPO, ".github/perfbot.yml", "main")]


def test_a_pr_that_edits_the_config_keeps_its_own_score(services, github):
    github.diffs[(REPO, NUMBER)] = diffs.MEDIUM
    ROUTER.dispatch("pull_request", payload(), services)
    before = services.store.reviews.get(REPO, NUMBER)
    github.diffs[(REPO, NUMBER)] = diffs.EDITS_CONFIG
    ROUTER.dispatch("pull_request", payload("synchronize"), services)
    after = services.store.reviews.get(REPO, NUMBER)
    assert (after.score, after.level) == (before.score, before.level)
    assert "config changes take effect after merge" in github.comments[(REPO, NUMBER)][0]


def test_the_default_branch_config_does_change_the_score(services, github):
    github.diffs[(REPO, NUMBER)] = diffs.MEDIUM
    github.files[(REPO, ".github/perfbot.yml", "main")] = diffs.CONFIG_LOWERING
    ROUTER.dispatch("pull_request", payload(), services)
    assert services.store.reviews.get(REPO, NUMBER).level == "low"


def test_an_invalid_default_branch_config_falls_back_to_defaults_and_says_so(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = "risk: [not, a, mapping]\n"
    ROUTER.dispatch("pull_request", payload(), services)
    body = github.comments[(REPO, NUMBER)][0]
    assert "Config problem" in body and "built-in defaults" in body
    assert services.store.reviews.get(REPO, NUMBER) is not None


def test_an_event_for_an_old_head_is_skipped_as_superseded(services, github):
    github.heads[(REPO, NUMBER)] = "c" * 40
    ROUTER.dispatch("pull_request", payload("synchronize"), services)
    assert github.comments == {} and github.checks == []


def test_a_deleted_pull_request_is_dropped_cleanly(services, github):
    del github.heads[(REPO, NUMBER)]
    ROUTER.dispatch("pull_request", payload(), services)
    assert github.comments == {}


@pytest.mark.parametrize(
    "data",
    [payload(draft=True), payload(state="closed"), payload("edited", changes={"title": {"from": "old"}})],
    ids=["draft", "closed", "title-edit"],
)
def test_drafts_closed_prs_and_title_edits_are_not_reviewed(data, services, github):
    ROUTER.dispatch("pull_request", data, services)
    assert github.comments == {}


def test_an_edit_that_changes_the_base_is_reviewed(services, github):
    ROUTER.dispatch("pull_request", payload("edited", changes={"base": {"ref": {"from": "dev"}}}), services)
    assert len(github.comments[(REPO, NUMBER)]) == 1


def test_unhandled_actions_have_no_handler():
    assert not ROUTER.wants("pull_request", payload("labeled"))
    assert not ROUTER.wants("star", {"action": "created"})
    assert ROUTER.wants("pull_request", payload("synchronize"))


def test_check_result_summary_is_the_review_without_the_marker(services, github):
    ROUTER.dispatch("pull_request", payload(), services)
    check = github.checks[0][1]
    assert MARKER not in check.summary and check.title.startswith("Performance risk: high")
    assert check.name == reviewing.CHECK_NAME


def test_a_config_naming_an_unknown_rule_falls_back_to_defaults_and_says_so(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = "risk:\n  disable: [no.such-rule]\n"
    ROUTER.dispatch("pull_request", payload(), services)
    assert "Config problem" in github.comments[(REPO, NUMBER)][0]


def test_someone_elses_comment_that_starts_with_the_marker_is_left_alone(services, github):
    planted = github.add_comment(REPO, NUMBER, "mallory", f"{MARKER}\nnot the bot's")
    ROUTER.dispatch("pull_request", payload(), services)
    github.diffs[(REPO, NUMBER)] = diffs.COLD
    ROUTER.dispatch("pull_request", payload("synchronize"), services)
    theirs, ours = github.comments[(REPO, NUMBER)]
    assert theirs == planted.body and ours.startswith(MARKER) and "**none**" in ours
    assert services.store.reviews.get(REPO, NUMBER).comment_id != planted.id


def test_reviewing_the_same_head_again_updates_its_check_instead_of_adding_one(services, github):
    ROUTER.dispatch("pull_request", payload(), services)
    github.diffs[(REPO, NUMBER)] = diffs.COLD
    ROUTER.dispatch("pull_request", payload("edited", changes={"base": {"ref": {"from": "dev"}}}), services)
    [(_, check)] = github.checks
    assert (check.head_sha, check.conclusion) == (SHA, "success")


def test_only_the_risk_labels_are_changed(services, github):
    github.labels[(REPO, NUMBER)] = {"bug", "perf-risk: low", "perf-riskless"}
    ROUTER.dispatch("pull_request", payload(), services)
    assert github.labels[(REPO, NUMBER)] == {"bug", "perf-riskless", "perf-risk: high"}


# --- quiet by default -------------------------------------------------------------------------------


def test_a_pull_request_below_the_comment_level_gets_a_check_but_no_new_comment(services, github):
    github.diffs[(REPO, NUMBER)] = diffs.COLD
    ROUTER.dispatch("pull_request", payload(), services)
    assert github.comments.get((REPO, NUMBER), []) == []
    [(_, check)] = github.checks
    assert check.head_sha == SHA and check.conclusion == "success"
    assert services.store.reviews.get(REPO, NUMBER).level == "none"


def test_an_existing_comment_is_still_updated_when_the_risk_drops(services, github):
    ROUTER.dispatch("pull_request", payload(), services)
    assert "**high**" in github.comments[(REPO, NUMBER)][0]
    github.heads[(REPO, NUMBER)] = "b" * 40
    github.diffs[(REPO, NUMBER)] = diffs.COLD
    ROUTER.dispatch("pull_request", payload("synchronize", sha="b" * 40), services)
    [body] = github.comments[(REPO, NUMBER)]
    assert "**none**" in body


@pytest.mark.parametrize("level, comments", [("none", 1), ("low", 0), ("medium", 1), ("high", 0)])
def test_the_config_sets_the_level_from_which_a_comment_is_written(services, github, level, comments):
    github.files[(REPO, ".github/perfbot.yml", "main")] = diffs.BASE_CONFIG + f"  comment: {level}\n"
    github.diffs[(REPO, NUMBER)] = diffs.MEDIUM if level in ("medium", "high") else diffs.COLD
    ROUTER.dispatch("pull_request", payload(), services)
    assert len(github.comments.get((REPO, NUMBER), [])) == comments
