"""The whole bot as an operator runs it: a signed `pull_request` sent to a real `perfbot serve`
process (gunicorn, its worker, the queue consumer process it starts) ends in a review on the
emulator, also when the consumer died just before and the one started in its place reviews."""

from __future__ import annotations

import json
import os
import signal

import requests

from bot.core.config.schema import CONFIG_PATH
from bot.core.render.comment import MARKER
from tests.emulator import live
from tests.service import diffs
from tests.support import github_data
from tests.support.github_emulator import wait_for
from tests.support.serving import environment, served
from tests.web.helpers import SECRET, headers

SHA, NUMBER = "5" * 40, 2


def test_a_signed_pull_request_to_perfbot_serve_gets_its_review(emulator, app_key, tmp_path):
    emulator.app_id, emulator.app_public_key = live.APP_ID, app_key[1]
    emulator.tokens.add("placeholder-so-that-auth-is-enforced")
    emulator.add_repo(live.REPO, live.DEFAULT_BRANCH).files[(live.DEFAULT_BRANCH, CONFIG_PATH)] = (
        diffs.BASE_CONFIG
    )
    emulator.add_pull(live.REPO, NUMBER, SHA, diffs.HIGH)
    settings = environment(
        PERFBOT_WEBHOOK_SECRET=SECRET,
        PERFBOT_APP_ID=str(live.APP_ID),
        PERFBOT_PRIVATE_KEY=app_key[0],
        PERFBOT_GITHUB_API_URL=emulator.base_url,
    )
    body = json.dumps(
        github_data.pull_request("opened", head_sha=SHA, number=NUMBER, installation_id=1)
    ).encode()
    with served(tmp_path, settings) as server:
        [consumer] = server.consumers()
        os.kill(consumer, signal.SIGKILL)
        response = requests.post(
            f"{server.base}/webhook", data=body, headers=headers("pull_request", body), timeout=10
        )
        assert (response.status_code, response.json()) == (202, {"message": "queued"})
        assert wait_for(lambda: emulator.comments_on(live.REPO, NUMBER), timeout=60), "no review comment"
        assert wait_for(lambda: emulator.labels.get((live.REPO, NUMBER)), timeout=10), "no label"
        assert server.consumers() not in ([], [consumer])
    [comment] = emulator.comments_on(live.REPO, NUMBER)
    assert comment["body"].startswith(MARKER) and "Performance risk: **high**" in comment["body"]
    assert comment["user"]["type"] == "Bot"
    [check] = emulator.checks_for(live.REPO, SHA)
    assert (check["name"], check["conclusion"]) == ("perfbot / risk", "neutral")
    assert emulator.labels[(live.REPO, NUMBER)] == ["perf-risk: high"]
