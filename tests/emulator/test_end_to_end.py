"""Signed delivery -> intake -> queue -> handler -> PyGithub -> the emulator's recorded state.

Payloads are GitHub's official examples (or derived from them and validated against GitHub's
schemas); every request the bot sends is validated against GitHub's REST description.
"""

from __future__ import annotations

import hashlib

import pytest

from bot.core.config.schema import CONFIG_PATH
from bot.core.render.comment import MARKER
from tests.emulator import live
from tests.service import diffs
from tests.support import github_data

SHA_1, SHA_2 = "1" * 40, "2" * 40
NUMBER = 2


@pytest.fixture
def bot(emulator, database_url, tmp_path, app_key):
    emulator.add_repo(live.REPO, live.DEFAULT_BRANCH).files[(live.DEFAULT_BRANCH, CONFIG_PATH)] = (
        diffs.BASE_CONFIG
    )
    emulator.add_pull(live.REPO, NUMBER, SHA_1, diffs.HIGH)
    running = live.start(emulator, database_url, f"sqlite:///{tmp_path / 'queue.db'}", app_key)
    yield running
    running.stop()


def opened(sha: str = SHA_1, action: str = "opened") -> dict:
    return github_data.pull_request(action, head_sha=sha, number=NUMBER, installation_id=1)


def test_an_opened_pr_gets_one_comment_a_check_run_and_a_label(bot, emulator):
    assert bot.deliver("pull_request", opened()).status_code == 202
    bot.wait_done(1)
    [comment] = emulator.comments_on(live.REPO, NUMBER)
    assert comment["body"].startswith(MARKER) and "Performance risk: **high**" in comment["body"]
    anchor = hashlib.sha256(diffs.GRAPHS.encode()).hexdigest()
    assert f"https://github.com/{live.REPO}/pull/{NUMBER}/files#diff-{anchor}L10" in comment["body"]
    [check] = emulator.checks_for(live.REPO, SHA_1)
    assert (check["name"], check["status"], check["conclusion"]) == ("perfbot / risk", "completed", "neutral")
    assert emulator.labels[(live.REPO, NUMBER)] == ["perf-risk: high"]
    assert emulator.issued_tokens, "App mode authenticates with an installation token"


def test_a_push_updates_the_same_comment_and_moves_the_label(bot, emulator):
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    emulator.add_pull(live.REPO, NUMBER, SHA_2, diffs.MEDIUM)
    bot.deliver("pull_request", opened(SHA_2, "synchronize"))
    bot.wait_done(2)
    [comment] = emulator.comments_on(live.REPO, NUMBER)
    assert "Performance risk: **medium**" in comment["body"]
    assert emulator.labels[(live.REPO, NUMBER)] == ["perf-risk: medium"]
    assert len(emulator.checks_for(live.REPO, SHA_2)) == 1


def test_a_replayed_delivery_is_processed_once(bot, emulator):
    payload = opened()
    bot.deliver("pull_request", payload, guid="same-guid")
    bot.wait_done(1)
    seen = len(emulator.requests)
    replay = bot.deliver("pull_request", payload, guid="same-guid")
    assert (replay.status_code, replay.json["message"]) == (200, "duplicate")
    bot.wait_idle()
    # The review is idempotent (a second run writes nothing new), so counting GitHub writes
    # cannot tell one run from two: count the runs, and every request a run makes.
    assert bot.runtime.store.deliveries.counts() == {"done": 1}
    assert emulator.requests[seen:] == [], "the replay was reviewed again"
    assert len(emulator.comments_on(live.REPO, NUMBER)) == 1


def test_a_502_after_github_created_the_comment_never_duplicates_it(bot, emulator):
    emulator.fail("POST", r"/issues/\d+/comments$", 502, after=True)
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    assert len(emulator.comments_on(live.REPO, NUMBER)) == 1
    assert bot.runtime.store.deliveries.counts() == {"done": 1}
    assert len(emulator.checks_for(live.REPO, SHA_1)) == 1


def test_a_secondary_rate_limit_with_retry_after_is_waited_out(bot, emulator):
    emulator.fail(
        "POST",
        r"/check-runs$",
        403,
        headers={"Retry-After": "1"},
        body={"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
    )
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    assert len(emulator.checks_for(live.REPO, SHA_1)) == 1
    statuses = [r.status for r in emulator.requests if r.path.endswith("/check-runs") and r.method == "POST"]
    assert statuses == [403, 201]


def test_server_errors_on_reads_are_retried(bot, emulator):
    emulator.fail("GET", rf"/pulls/{NUMBER}$", 503, times=2)
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    assert len(emulator.comments_on(live.REPO, NUMBER)) == 1


def test_a_deleted_pull_request_is_dropped_cleanly(bot, emulator):
    del emulator.repos[live.REPO].pulls[NUMBER]
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    assert emulator.writes() == [] and bot.runtime.store.deliveries.counts() == {"done": 1}


def test_config_comes_from_the_default_branch_and_a_pr_cannot_lower_its_own_score(bot, emulator):
    emulator.repos[live.REPO].files[("feature", CONFIG_PATH)] = diffs.CONFIG_LOWERING
    emulator.add_pull(live.REPO, NUMBER, SHA_1, diffs.EDITS_CONFIG)
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    body = emulator.comments_on(live.REPO, NUMBER)[0]["body"]
    assert "**medium**" in body and "config changes take effect after merge" in body
    reads = [r.query for r in emulator.requests if "/contents/" in r.path]
    assert reads == [f"ref={live.DEFAULT_BRANCH}"]


def test_a_merged_pr_is_recorded_with_its_risk(bot, emulator):
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    bot.deliver(
        "pull_request", github_data.pull_request("closed", head_sha=SHA_1, number=NUMBER, installation_id=1)
    )
    bot.wait_done(2)
    [merge] = bot.runtime.store.dashboard.merges(live.REPO)
    assert (merge.number, merge.level, merge.merge_sha) == (NUMBER, "high", "c" * 40)


def test_installation_events_keep_the_repository_list(bot):
    created = github_data.installation_event("installation", "created")
    bot.deliver("installation", created)
    bot.wait_done(1)
    assert {r.full_name for r in bot.runtime.store.installations.repositories()} == {
        r["full_name"] for r in created["repositories"]
    }


def test_a_5000_line_pr_gets_a_comment_within_githubs_limit(bot, emulator):
    emulator.add_pull(live.REPO, NUMBER, SHA_1, big_diff(files=250, lines_per_file=20))
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    body = emulator.comments_on(live.REPO, NUMBER)[0]["body"]
    assert len(body) < 65_536 and "more" in body


def test_a_diff_too_large_for_github_to_render_is_scored_from_the_file_list(bot, emulator):
    emulator.diff_line_limit = 100
    emulator.add_pull(live.REPO, NUMBER, SHA_1, big_diff(files=20, lines_per_file=10))
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    assert "Performance risk" in emulator.comments_on(live.REPO, NUMBER)[0]["body"]
    assert any(r.path.endswith("/files") for r in emulator.requests)


def test_token_mode_publishes_a_commit_status_instead_of_a_check_run(emulator, database_url, tmp_path):
    emulator.add_repo(live.REPO, live.DEFAULT_BRANCH).files[(live.DEFAULT_BRANCH, CONFIG_PATH)] = (
        diffs.BASE_CONFIG
    )
    emulator.add_pull(live.REPO, NUMBER, SHA_1, diffs.MEDIUM)
    bot = live.start(emulator, database_url, f"sqlite:///{tmp_path / 'queue.db'}", app_key=None)
    try:
        bot.deliver("pull_request", opened())
        bot.wait_done(1)
    finally:
        bot.stop()
    [status] = emulator.statuses
    assert (status["context"], status["state"], status["_sha"]) == ("perfbot / risk", "success", SHA_1)
    assert status["description"].startswith("MEDIUM risk ("), (
        "a flagged risk leads its green status with the level"
    )
    assert emulator.check_runs == {} and len(emulator.comments_on(live.REPO, NUMBER)) == 1


def test_the_redis_queue_runs_the_same_review(emulator, database_url, redis_url, app_key):
    emulator.add_repo(live.REPO, live.DEFAULT_BRANCH).files[(live.DEFAULT_BRANCH, CONFIG_PATH)] = (
        diffs.BASE_CONFIG
    )
    emulator.add_pull(live.REPO, NUMBER, SHA_1, diffs.HIGH)
    bot = live.start(emulator, database_url, redis_url, app_key)
    try:
        bot.deliver("pull_request", opened())
        bot.wait_done(1)
    finally:
        bot.stop()
    assert len(emulator.comments_on(live.REPO, NUMBER)) == 1


def big_diff(files: int, lines_per_file: int) -> str:
    """``files`` hot files of ``lines_per_file`` added lines each."""
    sections = []
    for i in range(files):
        path = f"python/sglang/srt/layers/attention/backend_{i:04d}.py"
        body = "".join(f"+    x_{j} = torch.cuda.synchronize()\n" for j in range(lines_per_file))
        sections.append(
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1,0 +1,{lines_per_file} @@ def forward(self):\n{body}"
        )
    return "".join(sections)


def test_an_installation_token_about_to_expire_is_renewed_by_itself(bot, emulator):
    emulator.token_lifetime_s = 15  # inside PyGithub's 20 s renewal margin: renewed before each use
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    emulator.add_pull(live.REPO, NUMBER, SHA_2, diffs.MEDIUM)
    bot.deliver("pull_request", opened(SHA_2, "synchronize"))
    bot.wait_done(2)
    assert len(emulator.issued_tokens) >= 2
    assert len(emulator.comments_on(live.REPO, NUMBER)) == 1


def test_the_sticky_comment_is_found_past_the_first_page_of_comments(bot, emulator):
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    template = emulator.comments_on(live.REPO, NUMBER)[0]
    for i in range(45):  # older human comments sort first: the bot's comment moves to page 2
        emulator.comments[1 + i] = {**template, "id": 1 + i, "body": f"human comment {i}"}
    emulator.add_pull(live.REPO, NUMBER, SHA_2, diffs.MEDIUM)
    bot.deliver("pull_request", opened(SHA_2, "synchronize"))
    bot.wait_done(2)
    ours = [c for c in emulator.comments_on(live.REPO, NUMBER) if c["body"].startswith(MARKER)]
    assert len(ours) == 1 and "**medium**" in ours[0]["body"]


def plant_foreign_marker_comment(emulator, login: str, kind: str) -> dict:
    """A comment by someone else that starts with the bot's marker (quoted, or planted)."""
    return emulator.add_comment(live.REPO, NUMBER, f"{MARKER}\nnot the bot's", login, kind)


def test_a_comment_by_someone_else_that_starts_with_the_marker_is_left_alone(bot, emulator):
    planted = plant_foreign_marker_comment(emulator, "mallory", "User")
    bot.deliver("pull_request", opened())
    bot.wait_done(1)
    ours = [c for c in emulator.comments_on(live.REPO, NUMBER) if c["user"]["type"] == "Bot"]
    assert len(ours) == 1 and "Performance risk" in ours[0]["body"]
    assert emulator.comments[planted["id"]]["body"].endswith("not the bot's")


def test_in_token_mode_only_the_tokens_own_comment_is_updated(emulator, database_url, tmp_path):
    emulator.add_repo(live.REPO, live.DEFAULT_BRANCH).files[(live.DEFAULT_BRANCH, CONFIG_PATH)] = (
        diffs.BASE_CONFIG
    )
    emulator.add_pull(live.REPO, NUMBER, SHA_1, diffs.MEDIUM)
    planted = plant_foreign_marker_comment(emulator, "mallory", "User")
    bot = live.start(emulator, database_url, f"sqlite:///{tmp_path / 'queue.db'}", app_key=None)
    try:
        bot.deliver("pull_request", opened())
        bot.wait_done(1)
        emulator.add_pull(live.REPO, NUMBER, SHA_2, diffs.COLD)
        bot.deliver("pull_request", opened(SHA_2, "synchronize"))
        bot.wait_done(2)
    finally:
        bot.stop()
    ours = [c for c in emulator.comments_on(live.REPO, NUMBER) if c["user"]["login"] == emulator.token_owner]
    assert len(ours) == 1 and "**none**" in ours[0]["body"]
    assert emulator.comments[planted["id"]]["body"].endswith("not the bot's")
