"""The dashboard's failed deliveries: shown to a signed-in user for the repositories they can
write to (asked through the emulated API), never to anonymous viewers."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from bot.bootstrap import build
from bot.settings import Settings
from bot.web.app import create_app
from tests.web.helpers import SECRET

CLIENT_ID, CLIENT_SECRET = "Iv1.failedtest", "client-secret-for-tests"
MINE, THEIRS = "octo/mine", "octo/theirs"


@pytest.fixture
def dash(tmp_path, emulator):
    settings = Settings(
        webhook_secrets=(SECRET,),
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}",
        queue_url=f"sqlite:///{tmp_path / 'queue.db'}",
        github_token="ghp_failedtest",
        github_api_url=emulator.base_url,
        github_web_url=emulator.base_url,
        oauth_client_id=CLIENT_ID,
        oauth_client_secret=CLIENT_SECRET,
        session_secret="s" * 40,
        public_url="http://localhost",
    )
    runtime = build(settings)
    emulator.add_oauth_app(CLIENT_ID, CLIENT_SECRET)
    emulator.add_repo(MINE).permissions["maintainer"] = "write"
    emulator.add_repo(THEIRS).permissions["maintainer"] = "read"
    for guid, repo, error in (
        ("g-mine", MINE, "NoCredentials: no GitHub credentials <script>"),
        ("g-theirs", THEIRS, "KeyError: 'x'"),
    ):
        delivery = runtime.store.deliveries.claim("1", guid, "pull_request", "opened", b"{}", repo)
        runtime.store.deliveries.start(delivery, 60, "w")
        runtime.store.deliveries.finish(delivery, "failed", error, "w", "permanent")
    yield create_app(settings, runtime.services, sessions=runtime.sessions).test_client(), emulator
    runtime.close()


def sign_in(client, emulator, login: str) -> None:
    started = client.get("/signin?next=/")
    authorize = urlsplit(started.headers["Location"])
    query = {k: v[0] for k, v in parse_qs(authorize.query).items()}
    granted = requests.post(
        f"{emulator.base_url}/login/oauth/authorize",
        allow_redirects=False,
        timeout=10,
        data={**query, "login": login},
    )
    back = urlsplit(granted.headers["Location"])
    assert client.get(f"{back.path}?{back.query}").status_code == 302


def test_anonymous_viewers_get_a_page_asking_them_to_sign_in(dash):
    client, _ = dash
    answer = client.get("/deliveries/failed")
    page = answer.get_data(as_text=True)
    assert answer.status_code == 401 and answer.mimetype == "text/html"
    assert 'href="/signin?next=/deliveries/failed"' in page and "Sign in with GitHub" in page
    assert "g-mine" not in page and "g-theirs" not in page
    assert "Failed deliveries" not in client.get("/").get_data(as_text=True)


def test_a_maintainer_sees_the_failures_of_the_repositories_they_can_write_to(dash):
    client, emulator = dash
    sign_in(client, emulator, "maintainer")
    page = client.get("/deliveries/failed").get_data(as_text=True)
    assert MINE in page and "g-mine" in page and "permanent" in page
    assert THEIRS not in page and "g-theirs" not in page
    assert "&lt;script&gt;" in page and "<script>" not in page.split("<main>")[1]
    assert "1 more failed deliveries belong to other repositories" in page
    assert 'href="/deliveries/failed"' in client.get("/").get_data(as_text=True)


def test_without_sign_in_configured_the_page_says_where_failures_are(tmp_path, emulator):
    settings = Settings(
        webhook_secrets=(SECRET,),
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}",
        queue_url=f"sqlite:///{tmp_path / 'queue.db'}",
    )
    runtime = build(settings)
    try:
        answer = create_app(settings, runtime.services).test_client().get("/deliveries/failed")
        page = answer.get_data(as_text=True)
        assert answer.status_code == 404 and answer.mimetype == "text/html", "a page, not raw JSON"
        assert "/healthz" in page and "<h1>" in page
        for setting in ("PERFBOT_OAUTH_CLIENT_ID", "PERFBOT_OAUTH_CLIENT_SECRET", "PERFBOT_SESSION_SECRET"):
            assert setting in page, setting
        assert 'href="/signin' not in page, "no sign-in link that could not work"
    finally:
        runtime.close()
