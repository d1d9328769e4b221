"""In token mode no installation event ever says which repositories are public: the bot learns it
from the `repository.private` of every pull request event, so that a public repository's flagged
merges show on the dashboard to anonymous viewers (PERFBOT_DASHBOARD_ANONYMOUS=public, the default)."""

from __future__ import annotations

from bot.core.config.schema import CONFIG_PATH
from tests.core.judge.results_data import BASE_SHA, HEAD_SHA
from tests.emulator import live
from tests.service import diffs
from tests.support import github_data

NUMBER = 5


def test_a_public_repositorys_flagged_merge_is_listed_to_an_anonymous_viewer(
    emulator, database_url, tmp_path
):
    state = emulator.add_repo(live.REPO, live.DEFAULT_BRANCH)
    state.files[(live.DEFAULT_BRANCH, CONFIG_PATH)] = (
        diffs.BASE_CONFIG + "bench:\n  dispatch: {auto: never, on_merge: never}\n"
    )
    emulator.add_pull(
        live.REPO, NUMBER, HEAD_SHA, diffs.HIGH, base_sha=BASE_SHA, base_ref=live.DEFAULT_BRANCH
    )
    bot = live.start(emulator, database_url, f"sqlite:///{tmp_path / 'queue.db'}", app_key=None)  # token mode
    try:
        assert bot.client.get("/api/v1/merges").json["items"] == []
        for action in ("opened", "closed"):
            payload = github_data.pull_request(action, head_sha=HEAD_SHA, number=NUMBER, repo=live.REPO)
            assert payload["repository"]["private"] is False
            payload.pop("installation", None)  # token mode: GitHub sends no installation
            assert bot.deliver("pull_request", payload).status_code == 202
            bot.wait_idle()
        [listed] = bot.client.get("/api/v1/merges").json["items"]
        assert (listed["repo"], listed["number"], listed["risk"]["level"]) == (live.REPO, NUMBER, "high")
    finally:
        bot.stop()
