"""The webhook relay passes GitHub's deliveries on unchanged: for any body and any secret, the
signature perfbot checks still verifies after the relay, and a real perfbot behind it takes a
signed ping; what perfbot answers comes back, and a perfbot that does not answer is a 502."""

from __future__ import annotations

import json
import threading
import uuid

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.datastructures import Headers
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from bot.bootstrap import build
from bot.settings import Settings
from bot.web import relay, signature
from bot.web.app import create_app
from tests.web.helpers import SECRET


def serving(app) -> tuple[str, object]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


class Receiver:
    """A stand-in for perfbot's intake: keeps what reached it, answers 202."""

    def __init__(self):
        self.received: list[tuple[bytes, Headers]] = []

    def __call__(self, environ, start_response):
        request = Request(environ)
        self.received.append((request.get_data(), Headers(request.headers)))
        return Response('{"queued": true}', 202, mimetype="application/json")(environ, start_response)


@pytest.fixture(scope="module")
def chain():
    receiver = Receiver()
    target, target_server = serving(receiver)
    relayed = relay.server("127.0.0.1", 0, f"{target}/webhook")
    threading.Thread(target=relayed.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{relayed.port}", receiver
    relayed.shutdown()
    target_server.shutdown()


def github_headers(secret: str, body: bytes, event: str = "pull_request") -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/abc123",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "42",
        "X-Hub-Signature-256": signature.sign(secret, body),
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.binary(max_size=4096),
    secret=st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s),
    path=st.sampled_from(["/", "/webhook", "/hooks/github"]),
)
def test_the_signature_verifies_after_the_relay_for_any_body(chain, body, secret, path):
    address, receiver = chain
    sent = github_headers(secret, body)
    answer = requests.post(f"{address}{path}", data=body, headers=sent, timeout=10)
    assert answer.status_code == 202 and answer.json() == {"queued": True}
    got_body, got_headers = receiver.received[-1]
    assert got_body == body
    assert signature.verify(got_headers.get("X-Hub-Signature-256"), got_body, [secret])
    for name in (
        "X-Hub-Signature-256",
        "X-GitHub-Event",
        "X-GitHub-Delivery",
        "X-GitHub-Hook-ID",
        "Content-Type",
        "User-Agent",
    ):
        assert got_headers[name] == sent[name], name


def test_a_real_perfbot_behind_the_relay_takes_a_signed_ping_and_refuses_a_forged_one(tmp_path):
    settings = Settings(
        webhook_secrets=(SECRET,),
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}",
        queue_url=f"sqlite:///{tmp_path / 'q.db'}",
    )
    runtime = build(settings)
    bot, bot_server = serving(create_app(settings, runtime.services))
    relayed = relay.server("127.0.0.1", 0, f"{bot}/webhook")
    threading.Thread(target=relayed.serve_forever, daemon=True).start()
    try:
        body = json.dumps(
            {"zen": "Keep it logically awesome.", "hook_id": 42}, separators=(",", ":")
        ).encode()
        url = f"http://127.0.0.1:{relayed.port}/webhook"
        answer = requests.post(url, data=body, headers=github_headers(SECRET, body, "ping"), timeout=10)
        assert answer.status_code == 200, answer.text
        forged = requests.post(
            url, data=body + b" ", headers=github_headers(SECRET, body, "ping"), timeout=10
        )
        assert (forged.status_code, forged.json()["message"]) == (403, "signature does not match")
    finally:
        relayed.shutdown()
        bot_server.shutdown()
        runtime.close()


def test_a_perfbot_that_does_not_answer_is_a_502_and_only_posts_are_relayed():
    relayed = relay.server("127.0.0.1", 0, "http://127.0.0.1:9/webhook")  # the discard port: nobody
    threading.Thread(target=relayed.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{relayed.port}/webhook"
        answer = requests.post(url, data=b"{}", headers=github_headers("s", b"{}"), timeout=10)
        assert answer.status_code == 502 and "could not reach perfbot" in answer.text
        assert requests.get(url, timeout=10).status_code == 405
    finally:
        relayed.shutdown()
