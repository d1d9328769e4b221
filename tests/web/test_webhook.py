"""POST /webhook against attacks and bad input; GET /healthz and /metrics."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.adapters.store.sql import SqlStore
from bot.bootstrap import build
from bot.service.services import Services
from bot.settings import Settings
from bot.web.app import create_app
from tests.service.fakes import FakeGitHubFactory, FakeQueue
from tests.support import github_data
from tests.web.helpers import SECRET, deliver, headers

# Signature and header checks never parse the body: any JSON object does for them.
PR_OPENED = {"action": "opened", "number": 1, "pull_request": {}, "repository": {}}


@pytest.fixture(scope="module")
def opened() -> dict:
    """GitHub's own example of a `pull_request` `opened` delivery: work the intake queues."""
    return github_data.pull_request("opened")


def make_app(database_url: str, tmp_path, secrets=(SECRET,)):
    settings = Settings(
        webhook_secrets=tuple(secrets),
        database_url=database_url,
        queue_url=f"sqlite:///{tmp_path / 'queue.db'}",
    )
    runtime = build(settings, github=FakeGitHubFactory())
    return create_app(settings, runtime.services), runtime


@pytest.fixture
def app_and_runtime(database_url, tmp_path):
    return make_app(database_url, tmp_path)


@pytest.fixture
def client(app_and_runtime):
    return app_and_runtime[0].test_client()


@pytest.fixture
def runtime(app_and_runtime):
    return app_and_runtime[1]


def stored(runtime) -> int:
    return sum(runtime.store.deliveries.counts().values())


def test_a_signed_pull_request_event_is_queued_with_202(client, runtime, opened):
    response = deliver(client, "pull_request", opened)
    assert response.status_code == 202
    assert runtime.queue.pending() == 1 and stored(runtime) == 1


def test_ping_is_answered_without_work(client, runtime):
    response = deliver(client, "ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    assert response.status_code == 200 and response.json["message"] == "pong"
    assert runtime.queue.pending() == 0 and stored(runtime) == 0


@pytest.mark.parametrize(
    "event,payload",
    [
        ("star", {"action": "created"}),
        ("pull_request", {"action": "labeled"}),
        ("pull_request", {"no": "action"}),
    ],
)
def test_unknown_events_and_actions_get_2xx_and_no_work(client, runtime, event, payload):
    assert deliver(client, event, payload).status_code == 200
    assert runtime.queue.pending() == 0 and stored(runtime) == 0


def test_a_replayed_guid_is_accepted_but_queued_once(client, runtime, opened):
    first = deliver(client, "pull_request", opened, guid="replayed-guid")
    again = deliver(client, "pull_request", opened, guid="replayed-guid")
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json["message"] == "duplicate" and runtime.queue.pending() == 1


def test_a_replay_after_a_restart_is_still_a_duplicate(database_url, tmp_path, opened):
    before, _ = make_app(database_url, tmp_path)
    assert deliver(before.test_client(), "pull_request", opened, guid="g-restart").status_code == 202
    after, runtime = make_app(database_url, tmp_path)
    assert deliver(after.test_client(), "pull_request", opened, guid="g-restart").status_code == 200
    assert runtime.queue.pending() == 1


def test_a_rotated_secret_is_accepted_alongside_the_new_one(database_url, tmp_path, opened):
    app, _ = make_app(database_url, tmp_path, secrets=("new-secret", SECRET))
    assert deliver(app.test_client(), "pull_request", opened, secret="new-secret").status_code == 202
    assert deliver(app.test_client(), "pull_request", opened).status_code == 202


def post(client, body: bytes, hdrs: dict):
    return client.post("/webhook", data=body, headers=hdrs)


BODY = json.dumps(PR_OPENED).encode()


def without(hdrs: dict, name: str) -> dict:
    return {k: v for k, v in hdrs.items() if k != name}


@pytest.mark.parametrize(
    "mutate,status",
    [
        (lambda h: without(h, "X-Hub-Signature-256"), 401),
        (lambda h: {**h, "X-Hub-Signature-256": "sha256=nothex"}, 403),
        (lambda h: {**h, "X-Hub-Signature-256": h["X-Hub-Signature-256"].removeprefix("sha256=")}, 403),
        (lambda h: {**h, "X-Hub-Signature-256": h["X-Hub-Signature-256"][:-2]}, 403),
        (lambda h: {**without(h, "X-Hub-Signature-256"), "X-Hub-Signature": "sha1=" + "a" * 40}, 401),
    ],
    ids=["missing", "not-hex", "no-prefix", "short", "sha1-only"],
)
def test_bad_signatures_are_refused_before_anything_is_parsed(client, runtime, mutate, status):
    assert post(client, BODY, mutate(headers("pull_request", BODY))).status_code == status
    assert stored(runtime) == 0


def test_a_wrong_secret_is_refused(client, runtime):
    assert post(client, BODY, headers("pull_request", BODY, secret="guess")).status_code == 403


def test_a_body_changed_after_signing_is_refused(client, runtime):
    signed = headers("pull_request", BODY)
    reformatted = json.dumps(PR_OPENED, indent=1).encode()
    assert post(client, reformatted, signed).status_code == 403
    assert post(client, BODY[:-1] + b" ", signed).status_code == 403
    assert stored(runtime) == 0


@pytest.mark.parametrize("name", ["X-GitHub-Event", "X-GitHub-Delivery"])
def test_the_event_and_delivery_headers_are_required(client, runtime, name):
    assert post(client, BODY, without(headers("pull_request", BODY), name)).status_code == 400


@pytest.mark.parametrize(
    "body,content_type,message",
    [
        (b'{"action": "opened"', "application/json", "not valid JSON"),
        (b'["a", "list"]', "application/json", "must be a JSON object"),
        (b'"text"', "application/json", "must be a JSON object"),
        (b'{"action": "\xff\xfe"}', "application/json", "not UTF-8"),
        (b"payload=%7B%7D", "application/x-www-form-urlencoded", "Content-Type"),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", "JSON"),
    ],
    ids=["truncated", "list", "string", "latin1", "form", "deep-nesting"],
)
def test_signed_but_malformed_bodies_get_400_and_no_crash(client, runtime, body, content_type, message):
    response = post(client, body, headers("pull_request", body, content_type=content_type))
    assert response.status_code == 400 and message in response.json["message"]
    assert stored(runtime) == 0


def test_a_body_over_25_mb_gets_413(client, runtime):
    body = b'{"pad": "' + b"x" * (25 * 1024 * 1024) + b'"}'
    response = post(client, body, headers("pull_request", body))
    assert response.status_code == 413 and stored(runtime) == 0


def test_a_chunked_body_over_25_mb_without_content_length_gets_413(client, runtime):
    body = b'{"pad": "' + b"x" * (25 * 1024 * 1024) + b'"}'
    response = client.post(
        "/webhook",
        input_stream=io.BytesIO(body),
        headers=headers("pull_request", body),
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert response.status_code == 413 and stored(runtime) == 0


def test_metrics_count_outcomes_and_stored_deliveries(client, opened):
    deliver(client, "pull_request", opened)
    deliver(client, "ping", {})
    text = client.get("/metrics").get_data(as_text=True)
    assert 'perfbot_webhook_deliveries_total{outcome="queued"} 1.0' in text
    assert 'perfbot_webhook_deliveries_total{outcome="ping"} 1.0' in text
    assert 'perfbot_deliveries{status="pending"} 1.0' in text
    assert "perfbot_queue_pending 1.0" in text


def test_the_app_works_over_any_implementation_of_the_ports(tmp_path, opened):
    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    services = Services(store=store, github=FakeGitHubFactory(), queue=FakeQueue())
    client = create_app(Settings(webhook_secrets=(SECRET,)), services).test_client()
    assert deliver(client, "pull_request", opened).status_code == 202
    assert services.queue.jobs == [1]
    assert "perfbot_queue_pending 1.0" in client.get("/metrics").get_data(as_text=True)
    store.engine.dispose()


def test_without_a_configured_secret_every_delivery_is_refused(database_url, tmp_path):
    app, runtime = make_app(database_url, tmp_path, secrets=())
    assert deliver(app.test_client(), "pull_request", PR_OPENED).status_code == 503
    assert stored(runtime) == 0


@pytest.fixture(scope="module")
def sqlite_client(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    app, runtime = make_app(f"sqlite:///{tmp / 'perfbot.db'}", tmp)
    return app.test_client()


@settings(max_examples=150, deadline=None)
@given(
    body=st.one_of(st.binary(max_size=300), st.from_regex(rb"\A[\[\]{}\"a-z0-9:, ]{0,200}\Z")),
    event=st.sampled_from(["pull_request", "installation", "ping", "push", "x" * 81]),
)
def test_any_signed_body_is_answered_without_a_server_error(sqlite_client, body, event):
    response = post(sqlite_client, body, headers(event, body))
    assert response.status_code in (200, 202, 400)


@pytest.mark.parametrize(
    "event,change,status",
    [
        ("issue_comment", lambda p: p.update(comment="/bench"), 200),
        ("issue_comment", lambda p: p["comment"].update(user="maintainer"), 400),
        ("issue_comment", lambda p: p["issue"].update(number=2**64), 400),
        ("pull_request_review", lambda p: p.update(review=["/bench"]), 200),
        ("pull_request_review", lambda p: p["review"].update(id="seventy-seven"), 400),
        ("workflow_run", lambda p: p.update(workflow_run=5), 200),
        ("workflow_run", lambda p: p["workflow_run"].update(display_title=["perfbot bench pb-1"]), 200),
        ("workflow_run", lambda p: p["workflow_run"].update(id=None), 400),
        ("pull_request", lambda p: p["pull_request"].update(head="main"), 400),
    ],
    ids=[
        "comment-a-string",
        "user-a-string",
        "number-past-64-bits",
        "review-a-list",
        "review-id-a-string",
        "run-a-number",
        "title-a-list",
        "run-id-null",
        "head-a-string",
    ],
)
def test_a_signed_payload_of_the_wrong_shape_is_refused_or_ignored_never_a_500(
    client, runtime, event, change, status
):
    payload = {
        "issue_comment": lambda: github_data.issue_comment(
            "/bench", number=7, repo="octo/engine", installation_id=1, login="maintainer", comment_id=5
        ),
        "pull_request_review": lambda: github_data.pull_request_review(
            "/bench", number=7, repo="octo/engine", installation_id=1, login="maintainer", review_id=6
        ),
        "workflow_run": lambda: github_data.workflow_run(
            "completed",
            {
                "id": 9,
                "display_title": "perfbot bench pb-1",
                "event": "workflow_dispatch",
                "path": ".github/workflows/perfbot-bench.yml",
                "status": "completed",
                "conclusion": "success",
                "run_attempt": 1,
                "html_url": "https://github.com/x",
                "head_sha": "a" * 40,
                "head_branch": "main",
            },
            repo="octo/engine",
            installation_id=1,
        ),
        "pull_request": lambda: github_data.pull_request("opened"),
    }[event]()
    change(payload)
    response = deliver(client, event, payload)
    assert response.status_code == status, response.json
    assert runtime.queue.pending() == 0 and stored(runtime) == 0
