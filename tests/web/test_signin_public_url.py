"""Sign-in's callback address (the OAuth `redirect_uri`) is the configured public URL, never the
request's Host header, which any client writes: without PERFBOT_PUBLIC_URL sign-in does not start."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.bootstrap import build
from bot.settings import Settings, SettingsError
from bot.web.app import create_app
from tests.web.helpers import SECRET

CLIENT_ID, CLIENT_SECRET, SESSION_SECRET = "Iv1.hosttest", "client-secret-for-tests", "s" * 40
PUBLIC_URL = "https://perfbot.example.com"
SIGN_IN = {
    "PERFBOT_OAUTH_CLIENT_ID": CLIENT_ID,
    "PERFBOT_OAUTH_CLIENT_SECRET": CLIENT_SECRET,
    "PERFBOT_SESSION_SECRET": SESSION_SECRET,
}


def configured(tmp_path, public_url: str | None) -> Settings:
    return Settings(
        webhook_secrets=(SECRET,),
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}",
        queue_url=f"sqlite:///{tmp_path / 'queue.db'}",
        github_token="ghp_hosttest",
        oauth_client_id=CLIENT_ID,
        oauth_client_secret=CLIENT_SECRET,
        session_secret=SESSION_SECRET,
        public_url=public_url,
    )


def test_sign_in_without_a_public_url_is_a_settings_error_that_names_it():
    with pytest.raises(SettingsError, match="PERFBOT_PUBLIC_URL is required for dashboard sign-in"):
        Settings.from_env(SIGN_IN)
    assert Settings.from_env({**SIGN_IN, "PERFBOT_PUBLIC_URL": PUBLIC_URL + "/"}).public_url == PUBLIC_URL
    assert Settings.from_env({}).public_url is None, "without sign-in it stays optional"


def test_an_app_with_sign_in_and_no_public_url_is_not_made(tmp_path):
    runtime = build(configured(tmp_path, None))
    try:
        with pytest.raises(ValueError, match="PERFBOT_PUBLIC_URL"):
            create_app(runtime.settings, runtime.services, sessions=runtime.sessions)
    finally:
        runtime.close()


@pytest.fixture
def client(tmp_path):
    runtime = build(configured(tmp_path, PUBLIC_URL))
    yield create_app(runtime.settings, runtime.services, sessions=runtime.sessions).test_client()
    runtime.close()


hosts = st.one_of(
    st.sampled_from(
        ["evil.example", "evil.example:443", "perfbot.example.com.evil.example", "127.0.0.1:8000", "[::1]"]
    ),
    st.from_regex(r"[a-z0-9.-]{1,40}(:[0-9]{1,5})?", fullmatch=True),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(host=hosts, forwarded=st.booleans())
def test_the_redirect_uri_is_the_public_url_whatever_host_the_request_names(client, host, forwarded):
    extra = {"X-Forwarded-Host": host, "X-Forwarded-Proto": "http"} if forwarded else {}
    started = client.get("/signin?next=/", headers={"Host": host, **extra})
    if started.status_code == 400:  # no host at all ('.', say): refused, and sent nowhere
        assert "Location" not in started.headers
        return
    assert started.status_code == 302
    query = parse_qs(urlsplit(started.headers["Location"]).query)
    assert query["redirect_uri"] == [f"{PUBLIC_URL}/signin/callback"]
