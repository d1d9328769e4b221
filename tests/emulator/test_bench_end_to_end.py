"""Benchmarks end to end, all real but GitHub: signed deliveries -> intake -> queue -> handlers ->
PyGithub -> the GitHub emulator's dispatches, runs, artifacts (real zip files behind a redirect),
reactions, replies, check runs and the sticky comment. Every request the bot sends is validated
against GitHub's REST description, every payload against GitHub's webhook schemas."""

from __future__ import annotations

import json
import logging
import re

import pytest
from sqlalchemy import text

from bot.core.bench import contract
from bot.core.render.comment import MARKER
from tests.core.bench.zips import archive, bomb
from tests.core.judge.results_data import BASE_SHA, EAGLE3, HEAD_SHA, document
from tests.emulator import live
from tests.emulator.bench_support import NUMBER, finish, replies, results_json, sticky
from tests.service import diffs
from tests.support import github_data
from tests.support.github_emulator import BLOB_PREFIX, wait_for

CONFIG = (
    diffs.BASE_CONFIG
    + """bench:
  suites:
    sglang-eagle3: {kind: sglang-eagle3, model_path: m, draft_model_path: d}
  dispatch:
    cooldown: {user: 0, pr: 0}
"""
)


@pytest.fixture
def bot(emulator, database_url, tmp_path, app_key):
    live.add_repository(emulator, CONFIG, {"maintainer": "write", "visitor": "read", "octocat": "read"})
    emulator.add_pull(
        live.REPO, NUMBER, HEAD_SHA, diffs.HIGH, base_sha=BASE_SHA, base_ref=live.DEFAULT_BRANCH
    )
    running = live.start(emulator, database_url, f"sqlite:///{tmp_path / 'queue.db'}", app_key)
    yield running
    running.stop()


def command(body: str, login: str = "maintainer", comment_id: int = 9001, **kw) -> dict:
    return github_data.issue_comment(
        body, number=NUMBER, repo=live.REPO, installation_id=1, login=login, comment_id=comment_id, **kw
    )


def say(bot, emulator, body: str, login: str = "maintainer", **kw) -> dict:
    """Post a comment on the emulated pull request and deliver its `issue_comment` event."""
    posted = emulator.add_comment(live.REPO, NUMBER, body, login)
    payload = command(body, login, posted["id"], **kw)
    assert bot.deliver("issue_comment", payload).status_code == 202
    bot.wait_idle()
    return posted


def eagle3_artifact(correlation_id: str, doc: dict | None = None) -> tuple[str, bytes]:
    return contract.artifact_name(correlation_id), archive(
        {"results.json": results_json(doc or document(EAGLE3))}
    )


def test_a_maintainers_bench_is_dispatched_and_its_results_come_back_to_the_pull_request(bot, emulator):
    posted = say(bot, emulator, "Thanks!\n/bench sglang-eagle3 --rounds 6")
    [dispatched] = emulator.dispatches
    inputs = dispatched["inputs"]
    assert (dispatched["workflow"], dispatched["ref"]) == ("perfbot-bench.yml", live.DEFAULT_BRANCH)
    assert (inputs["pr"], inputs["base-sha"], inputs["head-sha"], inputs["suites"], inputs["rounds"]) == (
        str(NUMBER),
        BASE_SHA,
        HEAD_SHA,
        "sglang-eagle3",
        "6",
    )
    run = emulator.runs[dispatched["run_id"]]
    assert run["display_title"] == f"perfbot bench {inputs['correlation-id']}"
    assert emulator.reactions_on(posted["id"]) == ["eyes", "rocket"]
    [check] = [c for c in emulator.checks_for(live.REPO, HEAD_SHA) if c["name"] == "perfbot / bench"]
    assert (check["status"], check["details_url"], check["external_id"]) == (
        "in_progress",
        run["html_url"],
        inputs["correlation-id"],
    )
    assert "Benchmarks are running" in sticky(emulator) and run["html_url"] in sticky(emulator)

    finish(bot, emulator, run["id"], artifact=eagle3_artifact(inputs["correlation-id"]))
    bot.wait_idle()
    body = sticky(emulator)
    assert body.startswith(MARKER) and "Performance risk: **high**" in body
    assert "Benchmark verdict: 🔴 regression" in body and "This PR makes the EAGLE-3 cycle 52% slower" in body
    assert "| `verify_ms` ms ↓ | 17.03 | 26.99 | +58.5% |" in body
    [check] = [c for c in emulator.checks_for(live.REPO, HEAD_SHA) if c["name"] == "perfbot / bench"]
    assert (check["status"], check["conclusion"]) == ("completed", "neutral")
    assert check["output"]["title"].startswith("Regression: This PR makes the EAGLE-3 cycle 52% slower")
    blob_requests = [r for r in emulator.requests if r.path.startswith("/_blobs/")]
    assert blob_requests and all(not r.headers["authorization"] for r in blob_requests), (
        "no token to the storage"
    )
    assert bot.runtime.store.deliveries.counts() == {"done": 2}


def test_without_run_details_the_run_is_found_by_its_correlation_id(bot, emulator):
    emulator.run_details = False  # a GitHub Enterprise Server that refuses return_run_details
    say(bot, emulator, "/bench")
    [dispatched] = emulator.dispatches
    posts = [r for r in emulator.requests if r.path.endswith("/dispatches")]
    assert [r.status for r in posts] == [422, 204] and "return_run_details" not in posts[1].body
    request = bot.runtime.store.benchmarks.for_pull(live.REPO, NUMBER)[0]
    assert (request.status, request.run_id) == ("running", dispatched["run_id"])


def test_a_run_the_dispatch_did_not_name_is_linked_when_github_announces_it(bot, emulator):
    emulator.run_details, emulator.runs_listed = False, False  # GitHub has not listed the run yet
    say(bot, emulator, "/bench")
    [dispatched] = emulator.dispatches
    request = bot.runtime.store.benchmarks.for_pull(live.REPO, NUMBER)[0]
    assert (request.status, request.run_id) == ("running", None)
    assert "the workflow run is linked here once GitHub starts it" in sticky(emulator)
    run = emulator.runs[dispatched["run_id"]]
    payload = github_data.workflow_run("requested", emulator._public(run), repo=live.REPO, installation_id=1)
    bot.deliver("workflow_run", payload)
    bot.wait_idle()
    assert bot.runtime.store.benchmarks.for_pull(live.REPO, NUMBER)[0].run_id == run["id"]
    assert run["html_url"] in sticky(emulator)
    [check] = [c for c in emulator.checks_for(live.REPO, HEAD_SHA) if c["name"] == "perfbot / bench"]
    assert check["details_url"] == run["html_url"]


@pytest.mark.parametrize(
    "login, body, says",
    [
        ("visitor", "/bench", "write access"),
        ("maintainer", "/bench --rounds 100000", "more than this repository allows"),
        ("maintainer", "/bench verify-step;rm -rf ~", "is not a suite name"),
    ],
)
def test_refusals_get_confused_and_one_short_reply(bot, emulator, login, body, says):
    posted = say(bot, emulator, body, login)
    assert emulator.dispatches == []
    assert emulator.reactions_on(posted["id"]) == ["confused"]
    [reply] = replies(emulator)
    assert "Not started:" in reply and says in reply


def test_a_fork_authors_pull_request_needs_a_maintainers_approval(bot, emulator):
    pull = emulator.repos[live.REPO].pulls[NUMBER]
    pull.head_repo, pull.author = "stranger/Hello-World", "stranger"
    emulator.repos[live.REPO].permissions["stranger"] = "read"
    opened = github_data.pull_request(
        "opened", head_sha=HEAD_SHA, number=NUMBER, repo=live.REPO, installation_id=1
    )
    opened["pull_request"]["updated_at"] = "2026-12-01T10:00:00Z"  # when GitHub saw the head pushed
    assert bot.deliver("pull_request", opened).status_code == 202
    bot.wait_idle()
    say(bot, emulator, "/bench", "stranger")
    say(bot, emulator, "/bench", "maintainer")
    assert emulator.dispatches == []
    assert "fork" in replies(emulator)[-1] and "/bench approve" in replies(emulator)[-1]
    approval = emulator.add_comment(live.REPO, NUMBER, "/bench approve", "maintainer")
    payload = command("/bench approve", "maintainer", approval["id"])
    payload["comment"]["created_at"] = "2026-12-01T10:05:00Z"  # written after the push: it covers the head
    assert bot.deliver("issue_comment", payload).status_code == 202
    bot.wait_idle()
    assert emulator.reactions_on(approval["id"]) == ["eyes", "+1"]
    say(bot, emulator, "/bench")
    assert len(emulator.dispatches) == 1


@pytest.mark.parametrize(
    "body", ["> /bench", "Try this:\n\n```\n/bench\n```", "run `/bench` later", "<!--\n/bench\n-->"]
)
def test_quoted_commented_or_code_commands_are_not_commands(bot, emulator, body):
    posted = say(bot, emulator, body)
    assert emulator.dispatches == [] and emulator.reactions_on(posted["id"]) == [] and replies(emulator) == []


def test_a_bots_comment_is_ignored(bot, emulator):
    posted = emulator.add_comment(live.REPO, NUMBER, "/bench", "ci[bot]", "Bot", app_id=99)
    bot.deliver("issue_comment", command("/bench", "ci[bot]", posted["id"], user_type="Bot", app_id=99))
    bot.wait_idle()
    assert emulator.dispatches == [] and emulator.reactions_on(posted["id"]) == []


def test_bench_on_an_issue_is_ignored(bot, emulator):
    bot.deliver("issue_comment", command("/bench", on_pull_request=False))
    bot.wait_idle()
    assert emulator.dispatches == [] and emulator.writes() == []


def test_a_10000_line_and_a_1_mb_comment_are_answered_once(bot, emulator):
    say(bot, emulator, "\n".join(["/bench --rounds 0"] * 10_000))
    say(bot, emulator, "/bench --rounds 0\n" + "x" * 1_000_000)
    posted = emulator.add_comment(live.REPO, NUMBER, "x" * 1_000_000 + "\n/bench", "maintainer")
    answer = bot.deliver("issue_comment", command("x" * 1_000_000 + "\n/bench", comment_id=posted["id"]))
    assert (answer.status_code, answer.json["message"]) == (200, "ignored"), "read only to GitHub's limit"
    bot.wait_idle()
    assert emulator.dispatches == [] and len(replies(emulator)) == 2


def test_a_signed_comment_replayed_under_a_new_delivery_id_does_not_dispatch_again(bot, emulator):
    posted = emulator.add_comment(live.REPO, NUMBER, "/bench", "maintainer")
    payload = command("/bench", comment_id=posted["id"])
    assert bot.deliver("issue_comment", payload, guid="first").status_code == 202
    bot.wait_idle()
    seen = len(emulator.requests)
    assert bot.deliver("issue_comment", payload, guid="second").status_code == 202, "a new delivery id"
    bot.wait_idle()
    assert len(emulator.dispatches) == 1 and emulator.requests[seen:] == [], "the replay asked GitHub nothing"
    assert bot.runtime.store.deliveries.counts() == {"done": 2}


def test_a_signed_completion_replayed_is_processed_once(bot, emulator):
    say(bot, emulator, "/bench")
    [dispatched] = emulator.dispatches
    finish(
        bot,
        emulator,
        dispatched["run_id"],
        artifact=eagle3_artifact(dispatched["inputs"]["correlation-id"]),
        guid="done-1",
    )
    bot.wait_idle()
    seen = len(emulator.requests)
    payload = github_data.workflow_run(
        "completed", emulator._public(emulator.runs[dispatched["run_id"]]), repo=live.REPO, installation_id=1
    )
    bot.deliver("workflow_run", payload, guid="done-2")
    bot.wait_idle()
    assert emulator.requests[seen:] == []


def test_a_push_supersedes_the_older_heads_benchmark(bot, emulator):
    say(bot, emulator, "/bench")
    [first] = emulator.dispatches
    emulator.add_pull(live.REPO, NUMBER, "7" * 40, diffs.COLD, base_sha=BASE_SHA)
    bot.deliver(
        "pull_request",
        github_data.pull_request("synchronize", head_sha="7" * 40, number=NUMBER, installation_id=1),
    )
    bot.wait_idle()
    assert emulator.runs[first["run_id"]]["conclusion"] == "cancelled"
    [old] = [c for c in emulator.checks_for(live.REPO, HEAD_SHA) if c["name"] == "perfbot / bench"]
    assert (old["status"], old["conclusion"]) == ("completed", "cancelled")
    assert "Benchmark superseded" in sticky(emulator)


def test_a_risky_push_by_a_trusted_author_is_benchmarked_without_asking(bot, emulator):
    emulator.repos[live.REPO].permissions["octocat"] = "write"
    bot.deliver(
        "pull_request",
        github_data.pull_request("opened", head_sha=HEAD_SHA, number=NUMBER, installation_id=1),
    )
    bot.wait_idle()
    [dispatched] = emulator.dispatches
    assert dispatched["inputs"]["suites"] == "sglang-eagle3"
    assert "started automatically" in sticky(emulator)


@pytest.mark.parametrize(
    "status, body, says",
    [
        (404, {"message": "Not Found"}, "there is no workflow"),
        (422, {"message": 'Unexpected inputs provided: ["max-rounds"]'}, "does not accept perfbot"),
        (403, {"message": "Resource not accessible by integration"}, "not allowed to start workflows"),
    ],
)
def test_github_refusing_the_dispatch_is_answered_on_the_pull_request(bot, emulator, status, body, says):
    emulator.fail("POST", r"/dispatches$", status, times=10, body=body)
    posted = say(bot, emulator, "/bench")
    assert emulator.dispatches == [] and emulator.reactions_on(posted["id"]) == ["eyes", "confused"]
    assert "perfbot could not start the benchmark" in sticky(emulator) and says in sticky(emulator)
    assert bot.runtime.store.deliveries.counts() == {"done": 1}


def test_a_secondary_rate_limit_that_does_not_end_is_answered_on_the_pull_request(bot, emulator):
    emulator.fail(
        "POST",
        r"/dispatches$",
        403,
        times=20,
        headers={"Retry-After": "1"},
        body={"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
    )
    say(bot, emulator, "/bench")
    assert emulator.dispatches == []
    assert "rate limit" in sticky(emulator)


@pytest.mark.parametrize("attack", ["bomb", "traversal", "symlink", "hostile", "not-a-zip"])
def test_a_hostile_artifact_is_never_a_verdict_or_a_crash(bot, emulator, attack):
    say(bot, emulator, "/bench")
    [dispatched] = emulator.dispatches
    correlation = dispatched["inputs"]["correlation-id"]
    hostile = document(
        EAGLE3,
        failed={"head": 1},
        error="<script>alert(1)</script> @maintainers [click](http://evil.example) **boom**",
    )
    hostile["suite"] = "sglang-eagle3"
    hostile["head"]["fingerprint"]["host"]["name"] = "<img src=x onerror=alert(1)> @everyone"
    hostile["metrics"]["verify_ms"]["unit"] = "ms](http://evil.example)"
    link_name = "https://evil.example/@maintainers"  # a valid metric name: letters, digits and _.:/@+-
    hostile["metrics"][link_name] = hostile["metrics"].pop("draft_ms")
    for round_ in hostile["rounds"]:
        if "draft_ms" in round_["metrics"]:
            round_["metrics"][link_name] = round_["metrics"].pop("draft_ms")
    data = {
        "bomb": lambda: bomb(200 * 2**20),
        "traversal": lambda: archive(
            {"../results.json": results_json(document(EAGLE3)), "/etc/results.json": b"{}"}
        ),
        "symlink": lambda: archive({}, links={"results.json": "/etc/passwd"}),
        "hostile": lambda: archive({"results.json": results_json(hostile)}),
        "not-a-zip": lambda: b"this is not a zip",
    }[attack]()
    finish(bot, emulator, dispatched["run_id"], artifact=(contract.artifact_name(correlation), data))
    bot.wait_idle()
    body = sticky(emulator)
    assert bot.runtime.store.deliveries.counts() == {"done": 2}
    section = body[body.index("### ⏱️ Benchmarks") :]
    if attack == "hostile":
        assert "Benchmark verdict" in section
        assert re.search(r"(?<!\\)<(script|img)", section) is None and "](http://evil" not in section
        assert "`@maintainers`" in section and "`@everyone`" in section
        assert (
            f"`{link_name}`" in section and f"]({link_name}" not in section and f"<{link_name}" not in section
        )
    else:
        assert "No verdict" in section and "regression" not in section.lower()


def test_a_completion_for_an_unknown_id_or_another_repository_is_ignored(bot, emulator):
    say(bot, emulator, "/bench")
    [dispatched] = emulator.dispatches
    run = emulator.complete_run(dispatched["run_id"])
    unknown = github_data.workflow_run(
        "completed", {**run, "display_title": "perfbot bench pb-unknown"}, repo=live.REPO, installation_id=1
    )
    elsewhere = github_data.workflow_run("completed", run, repo="mallory/Hello-World", installation_id=1)
    seen = len(emulator.requests)
    bot.deliver("workflow_run", unknown)
    bot.deliver("workflow_run", elsewhere)
    bot.wait_idle()
    assert emulator.requests[seen:] == []
    assert bot.runtime.store.benchmarks.for_pull(live.REPO, NUMBER)[0].status == "running"


def test_another_apps_bot_comment_with_our_marker_is_not_ours(bot, emulator):
    planted = emulator.add_comment(
        live.REPO, NUMBER, f"{MARKER}\nanother app", "other-app[bot]", "Bot", app_id=31337
    )
    bot.deliver(
        "pull_request",
        github_data.pull_request("opened", head_sha=HEAD_SHA, number=NUMBER, installation_id=1),
    )
    bot.wait_idle()
    assert emulator.comments[planted["id"]]["body"] == f"{MARKER}\nanother app"
    ours = [
        c
        for c in emulator.comments_on(live.REPO, NUMBER)
        if c["performed_via_github_app"] and c["performed_via_github_app"]["id"] == live.APP_ID
    ]
    assert len(ours) == 1 and "Performance risk" in ours[0]["body"]


def test_a_review_body_command_is_answered_by_replies(bot, emulator):
    payload = github_data.pull_request_review(
        "Looks risky.\n/bench",
        number=NUMBER,
        repo=live.REPO,
        installation_id=1,
        login="maintainer",
        review_id=77,
    )
    bot.deliver("pull_request_review", payload)
    bot.wait_idle()
    assert len(emulator.dispatches) == 1 and emulator.reactions == []
    assert json.loads(json.dumps(emulator.dispatches[0]["inputs"]))["head-sha"] == HEAD_SHA


def test_token_mode_follows_the_benchmark_with_a_commit_status(emulator, database_url, tmp_path):
    live.add_repository(emulator, CONFIG, {"maintainer": "write"})
    emulator.add_pull(live.REPO, NUMBER, HEAD_SHA, diffs.HIGH, base_sha=BASE_SHA)
    bot = live.start(emulator, database_url, f"sqlite:///{tmp_path / 'queue.db'}", app_key=None)
    try:
        posted = say(bot, emulator, "/bench")
        [dispatched] = emulator.dispatches
        finish(
            bot,
            emulator,
            dispatched["run_id"],
            artifact=eagle3_artifact(dispatched["inputs"]["correlation-id"]),
        )
        bot.wait_idle()
    finally:
        bot.stop()
    statuses = [s for s in emulator.statuses if s["context"] == "perfbot / bench"]
    assert [s["state"] for s in statuses] == ["pending", "success"]
    assert statuses[0]["target_url"] == emulator.runs[dispatched["run_id"]]["html_url"]
    assert statuses[-1]["description"].startswith("Regression: This PR makes")
    assert emulator.reactions_on(posted["id"]) == ["eyes", "rocket"] and emulator.check_runs == {}
    assert "Benchmark verdict: 🔴 regression" in sticky(emulator)


def test_token_mode_shows_a_benchmark_that_failed_as_an_error_not_a_green_tick(
    emulator, database_url, tmp_path
):
    live.add_repository(emulator, CONFIG, {"maintainer": "write"})
    emulator.add_pull(live.REPO, NUMBER, HEAD_SHA, diffs.HIGH, base_sha=BASE_SHA)
    bot = live.start(emulator, database_url, f"sqlite:///{tmp_path / 'queue.db'}", app_key=None)
    try:
        say(bot, emulator, "/bench")
        [dispatched] = emulator.dispatches
        finish(bot, emulator, dispatched["run_id"], conclusion="failure")
        bot.wait_idle()
    finally:
        bot.stop()
    statuses = [s for s in emulator.statuses if s["context"] == "perfbot / bench"]
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert "no verdict" in statuses[-1]["description"]


def test_an_artifact_its_storage_refuses_is_retried_and_its_signed_address_never_stored(
    bot, emulator, caplog
):
    say(bot, emulator, "/bench sglang-eagle3")
    [dispatched] = emulator.dispatches
    emulator.blob_failures = 2  # the storage is busy twice, then hands the artifact over
    finish(
        bot, emulator, dispatched["run_id"], artifact=eagle3_artifact(dispatched["inputs"]["correlation-id"])
    )
    bot.wait_idle()
    assert "Benchmark verdict" in sticky(emulator)
    logged = perfbot_log(caplog)
    assert logged.count("the artifact's storage answered 503") >= 2, "each refusal retried"
    assert BLOB_PREFIX not in logged and "sig=" not in logged


def test_an_artifact_its_storage_always_refuses_fails_the_request_without_its_address(bot, emulator, caplog):
    say(bot, emulator, "/bench sglang-eagle3")
    [dispatched] = emulator.dispatches
    emulator.blob_failures = 1000
    finish(
        bot, emulator, dispatched["run_id"], artifact=eagle3_artifact(dispatched["inputs"]["correlation-id"])
    )
    bot.wait_idle(timeout=60)
    with bot.runtime.store.engine.connect() as connection:
        errors = [
            e for (e,) in connection.execute(text("SELECT error FROM deliveries WHERE status = 'failed'"))
        ]
    assert errors == ["ArtifactUnavailable: the artifact's storage answered 503"]
    assert wait_for(
        lambda: any("could not process a `workflow_run` event" in r for r in replies(emulator)), 10
    )
    assert BLOB_PREFIX not in perfbot_log(caplog)


def perfbot_log(caplog) -> str:
    """What perfbot's own loggers wrote, tracebacks included (urllib3's debug lines are not perfbot's)."""
    formatter = logging.Formatter()
    return "\n".join(formatter.format(r) for r in caplog.records if r.name.startswith("perfbot"))
