"""The GitHub client says what kind each of GitHub's failures is, against the API emulator (every
request validated against GitHub's REST description): 5xx, timeouts and rate limits transient,
refused credentials and deleted repositories permanent, a refused installation token renewed; and
every public method of the client says so."""

from __future__ import annotations

import inspect
import logging
import time

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github import GithubException, RateLimitExceededException

from bot.adapters.github_client import PyGithubClient, PyGithubFactory, retry_policy
from bot.adapters.github_errors import BY_APP, BY_PERSONAL, translated
from bot.adapters.store.sql import SqlStore
from bot.core.checks import Check
from bot.service import failures
from bot.service.dashboard import access
from bot.service.failures import Kind
from bot.service.ports.github import ArtifactInvalid, GitHub, PullRequestGone
from bot.service.services import Services
from bot.settings import Settings
from tests.service.fakes import FakeQueue

REPO, NUMBER, SHA, TOKEN, APP_ID = "Codertocat/Hello-World", 7, "a" * 40, "ghp_test", 4711
MARKER = "<!-- perfbot:test -->"
SECONDARY = {
    "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
}


@pytest.fixture(scope="module")
def app_key() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@pytest.fixture
def github(emulator):
    emulator.add_repo(REPO, "master")
    emulator.add_pull(REPO, NUMBER, SHA, "diff --git a/x b/x\n")
    emulator.tokens.add(TOKEN)
    return emulator


def client(emulator, token: str | None = TOKEN, timeout: int = 30, retries: int = 2):
    settings = Settings(github_token=token, github_api_url=emulator.base_url)
    factory = PyGithubFactory(
        settings, retry=retry_policy(total=retries, backoff=0, secondary_wait=1), timeout=timeout
    )
    return factory.for_installation(None)


def app_client(emulator, app_key, private_key: str | None = None):
    emulator.app_id, emulator.app_public_key = APP_ID, app_key[1]
    settings = Settings(
        app_id=APP_ID, private_key=private_key or app_key[0], github_api_url=emulator.base_url
    )
    factory = PyGithubFactory(settings, retry=retry_policy(total=2, backoff=0, secondary_wait=1))
    return factory


def test_a_5xx_that_lasts_is_transient_and_one_that_passes_is_retried_inside_the_request(github):
    github.fail("GET", rf"/pulls/{NUMBER}$", 502, times=1)
    assert client(github).pull(REPO, NUMBER).head_sha == SHA
    github.fail("GET", rf"/pulls/{NUMBER}$", 503, times=10)
    with pytest.raises(failures.Transient):
        client(github).pull(REPO, NUMBER)


def test_a_write_that_got_a_5xx_is_transient_and_its_retry_finds_what_it_made(github):
    github.fail("POST", rf"/issues/{NUMBER}/comments$", 502, after=True)  # made, then answered 502
    with pytest.raises(failures.Transient, match="502"):
        client(github).upsert_comment(REPO, NUMBER, MARKER, f"{MARKER}\nfirst")
    client(github).upsert_comment(REPO, NUMBER, MARKER, f"{MARKER}\nfirst")
    assert len(github.comments_on(REPO, NUMBER)) == 1


def test_a_timeout_that_lasts_is_transient(github):
    github.slow("GET", rf"/pulls/{NUMBER}$", seconds=2.5, times=5)
    started = time.monotonic()
    with pytest.raises(failures.Transient, match="could not be reached|retries ran out"):
        client(github, timeout=1, retries=1).pull(REPO, NUMBER)
    assert time.monotonic() - started < 10


def test_a_secondary_rate_limit_is_waited_out_as_retry_after_says(github):
    github.fail("GET", rf"/pulls/{NUMBER}$", 403, headers={"Retry-After": "1"}, body=SECONDARY)
    started = time.monotonic()
    assert client(github).pull(REPO, NUMBER).head_sha == SHA
    assert time.monotonic() - started >= 1.0
    waited = [r for r in github.requests if r.path.endswith(f"/pulls/{NUMBER}")]
    assert [r.status for r in waited] == [403, 200]


def test_a_rate_limit_longer_than_a_request_waits_is_transient_with_the_wait(github):
    reset = int(time.time()) + 600
    github.fail(
        "GET",
        rf"/pulls/{NUMBER}$",
        403,
        times=3,
        body={"message": "API rate limit exceeded for user."},
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
    )
    with pytest.raises(failures.Transient) as raised:
        client(github).pull(REPO, NUMBER)
    assert 500 < raised.value.retry_after <= 602


def test_refused_credentials_and_none_are_permanent(github):
    with pytest.raises(failures.BadCredentials, match="PERFBOT_GITHUB_TOKEN"):
        client(github, token="ghp_revoked").pull(REPO, NUMBER)
    with pytest.raises(failures.NoCredentials, match="PERFBOT_APP_ID"):
        client(github, token=None)


def test_a_deleted_repository_is_permanent(github):
    with pytest.raises(failures.Gone):
        client(github).default_branch("Codertocat/deleted")
    with pytest.raises(PullRequestGone) as raised:
        client(github).pull("Codertocat/deleted", NUMBER)
    assert isinstance(raised.value, failures.Gone)  # what treats every kind of gone alike catches the base


def test_an_installation_token_refused_once_is_renewed(github, app_key):
    factory = app_client(github, app_key)
    github.tokens.add("placeholder-so-that-auth-is-enforced")
    first = factory.for_installation(1)
    github.fail("GET", rf"/pulls/{NUMBER}$", 401, body={"message": "Bad credentials"})
    with pytest.raises(failures.Transient, match="new one"):
        first.pull(REPO, NUMBER)
    renewed = factory.for_installation(1)
    assert renewed is not first and renewed.pull(REPO, NUMBER).head_sha == SHA
    assert len(github.issued_tokens) == 2


def test_an_installation_token_refused_twice_running_is_permanent(github, app_key):
    factory = app_client(github, app_key)
    github.tokens.add("placeholder-so-that-auth-is-enforced")
    github.fail("GET", rf"/pulls/{NUMBER}$", 401, times=2, body={"message": "Bad credentials"})
    with pytest.raises(failures.Transient):
        factory.for_installation(1).pull(REPO, NUMBER)
    with pytest.raises(failures.BadCredentials):
        factory.for_installation(1).pull(REPO, NUMBER)


def test_an_app_whose_key_github_refuses_is_permanent_at_once(github, app_key):
    other = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )
    factory = app_client(github, app_key, private_key=other)
    with pytest.raises(failures.BadCredentials, match="PERFBOT_PRIVATE_KEY"):
        factory.for_installation(1)
    with pytest.raises(failures.BadCredentials, match="PERFBOT_PRIVATE_KEY"):
        factory.bot_login()


def test_app_mode_without_an_installation_is_an_installation_gone(github, app_key):
    with pytest.raises(failures.InstallationGone, match="needs the installation") as raised:
        app_client(github, app_key).for_installation(None)
    assert not isinstance(raised.value, PullRequestGone)
    assert failures.classify(raised.value) is Kind.PERMANENT
    assert failures.hint_for(type(raised.value).__name__) == failures.Gone.hint


@pytest.mark.parametrize(
    "status, message", [(404, "Not Found"), (403, "This installation has been suspended")]
)
def test_an_installation_uninstalled_or_suspended_is_an_installation_gone(github, app_key, status, message):
    github.fail("POST", r"/app/installations/1/access_tokens$", status, body={"message": message})
    with pytest.raises(failures.InstallationGone, match=rf"installation 1 is gone or suspended \({status}\)"):
        app_client(github, app_key).for_installation(1)


def test_the_dashboard_reads_no_permission_where_the_app_has_no_installation(
    github, app_key, tmp_path, caplog
):
    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    try:
        services = Services(store=store, github=app_client(github, app_key), queue=FakeQueue())
        with caplog.at_level(logging.WARNING):
            assert access.permission(services, REPO, "someone") == "none"  # no installation known for REPO
    finally:
        store.engine.dispose()
    assert [r.message for r in caplog.records if r.levelno >= logging.WARNING] == []  # gone, not failed


def test_an_artifact_over_the_cap_or_without_a_download_address_is_invalid_for_good(github):
    uploaded = github.upload_artifact(REPO, 1, "perfbot-results-pb-1", b"PK zip bytes")
    assert client(github).download_artifact(REPO, uploaded["id"], 100) == b"PK zip bytes"
    with pytest.raises(ArtifactInvalid, match="at most 5 are read") as raised:
        client(github).download_artifact(REPO, uploaded["id"], 5)
    assert failures.classify(raised.value) is Kind.PERMANENT
    uploaded["expired"] = True  # GitHub answers 410 instead of a download address
    with pytest.raises(ArtifactInvalid, match="answered 410"):
        client(github).download_artifact(REPO, uploaded["id"], 100)


# Every public method of the client, with arguments GitHub's REST description accepts.
ARGUMENTS = {
    "repo": REPO,
    "number": NUMBER,
    "path": "perfbot.yml",
    "ref": "master",
    "marker": MARKER,
    "body": f"{MARKER}\nbody",
    "create": True,
    "check_run_id": None,
    "prefix": "perf-risk: ",
    "wanted": "perf-risk: high",
    "login": "someone",
    "comment_id": 1,
    "content": "eyes",
    "sha": SHA,
    "base": SHA,
    "head": "master",
    "workflow": "perfbot-bench.yml",
    "inputs": {"correlation-id": "pb-1"},
    "correlation_id": "pb-1",
    "run_id": 1,
    "artifact_id": 1,
    "max_bytes": 1000,
    "title": "perfbot: a regression",
    "check": Check(name="perfbot / risk", head_sha=SHA, conclusion="neutral", title="t", summary="s"),
}
PUBLIC = sorted(
    name
    for name, value in vars(PyGithubClient).items()
    if inspect.isfunction(value) and not name.startswith("_")
)


def test_every_public_method_of_the_client_is_classified_where_it_is_defined():
    assert set(GitHub.__abstractmethods__) <= set(PUBLIC)
    unclassified = [name for name in PUBLIC if not getattr(vars(PyGithubClient)[name], "classified", False)]
    assert unclassified == [], "decorate these with @classified"


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_method_of_the_client_turns_githubs_failure_into_a_kind(github, name):
    """A method that escaped the classification would raise PyGithub's own exception (a bug)."""
    for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
        github.fail(method, r".", 503, times=100)
    method = getattr(client(github, retries=0), name)
    missing = [p for p in inspect.signature(method).parameters if p not in ARGUMENTS]
    assert missing == [], f"give ARGUMENTS an example of {missing}"
    with pytest.raises(failures.Transient):
        method(**{p: ARGUMENTS[p] for p in inspect.signature(method).parameters})


_RATE_LIMITED = RateLimitExceededException(403, {"message": "API rate limit exceeded"}, {"Retry-After": "30"})


@pytest.mark.parametrize(
    "error, kind, retry_after",
    [
        (GithubException(400, {"message": "Problems parsing JSON"}, {}), failures.Permanent, None),
        (GithubException(401, {"message": "Bad credentials"}, {}), failures.BadCredentials, None),
        (
            GithubException(403, {"message": "Resource not accessible by integration"}, {}),
            failures.Permanent,
            None,
        ),
        (_RATE_LIMITED, failures.Transient, 30.0),
        (GithubException(404, {"message": "Not Found"}, {}), failures.Gone, None),
        (GithubException(406, {"message": "too_large"}, {}), None, None),
        (GithubException(408, {"message": "timeout"}, {}), failures.Transient, None),
        (
            GithubException(409, {"message": "Cannot cancel a workflow run that is completed."}, {}),
            None,
            None,
        ),
        (GithubException(410, {"message": "Gone"}, {}), failures.Gone, None),
        (GithubException(418, {"message": "teapot"}, {}), None, None),
        (GithubException(422, {"message": "Validation Failed"}, {}), failures.Permanent, None),
        (
            GithubException(429, {"message": "Too Many Requests"}, {"Retry-After": "7"}),
            failures.Transient,
            7.0,
        ),
        (GithubException(500, {"message": "oops"}, {}), failures.Transient, None),
        (GithubException(503, {"message": "busy"}, {"retry-after": "2"}), failures.Transient, 2.0),
        (requests.exceptions.RetryError("out"), failures.Transient, None),
        (requests.ConnectionError("refused"), failures.Transient, None),
        (KeyError("number"), None, None),
    ],
    ids=lambda v: getattr(v, "status", None) or type(v).__name__ if isinstance(v, Exception) else None,
)
def test_each_of_githubs_answers_has_one_kind_wherever_no_request_knows_better(error, kind, retry_after):
    found = translated(error, "reading", BY_PERSONAL)
    assert type(found) is kind if kind is not None else found is None
    assert getattr(found, "retry_after", None) == retry_after


def test_a_401_is_decided_by_whose_credentials_github_refused():
    refused = GithubException(401, {"message": "Bad credentials"}, {})
    assert "PERFBOT_GITHUB_TOKEN" in str(translated(refused, "pull", BY_PERSONAL))
    assert "PERFBOT_PRIVATE_KEY" in str(translated(refused, "reading the App", BY_APP))
    renewed = translated(refused, "pull", BY_PERSONAL, renew=lambda: True)
    assert type(renewed) is failures.Transient and "new one" in str(renewed)
