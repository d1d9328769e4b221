"""One-click registration of the GitHub App from its manifest, end to end against the GitHub
stand-in (every REST request validated against GitHub's description): the page posts the manifest
to GitHub's new-App page for an account or an organisation, GitHub sends the browser back with a
code and the state, the server trades the code for the App's credentials and writes them 0600
where the settings read them; a foreign state or an existing file registers nothing, and only the
operator holding the code printed on the console starts or finishes a registration."""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import stat
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
import requests

from bot.bootstrap import build
from bot.settings import Settings
from bot.web import app_setup, setup_code
from bot.web.app import create_app

PUBLIC = "https://perfbot.example.test"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def code():
    """The code `perfbot serve --register-app` prints on the operator's console."""
    yield setup_code.issue()
    setup_code.spend()


@pytest.fixture
def setup(tmp_path, emulator, code):
    env_file = tmp_path / "perfbot-app.env"
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}",
        queue_url=f"sqlite:///{tmp_path / 'q.db'}",
        github_api_url=emulator.base_url,
        github_web_url=emulator.base_url,
        register_app_to=str(env_file),
    )
    runtime = build(settings)
    yield create_app(settings, runtime.services).test_client(), emulator, env_file
    runtime.close()


def post_page(client, **query) -> tuple[str, dict]:
    """Step 1 answered: the page that posts the manifest, its form's action and fields."""
    form = {"code": setup_code._code, "public_url": PUBLIC, **query}
    answer = client.post("/setup/app", data=form, base_url=PUBLIC)
    assert answer.status_code == 200
    page = answer.get_data(as_text=True)
    action = html.unescape(re.search(r'<form method="post" action="([^"]+)" id="register">', page)[1])
    manifest = html.unescape(re.search(r'name="manifest" value="([^"]*)"', page)[1])
    assert "form-action 'self' " + urlsplit(action).scheme in answer.headers["Content-Security-Policy"]
    return action, {"manifest": manifest}


def github_creates_the_app(action: str, form: dict) -> str:
    """The browser on GitHub: the manifest posted, the App created; where GitHub sends it back."""
    shown = requests.post(action, data=form, timeout=10)
    assert shown.status_code == 200
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', shown.text))
    fields = {k: html.unescape(v) for k, v in fields.items()}
    created = requests.post(
        f"{urlsplit(action).scheme}://{urlsplit(action).netloc}/settings/apps/new/create",
        data=fields,
        allow_redirects=False,
        timeout=10,
    )
    assert created.status_code == 302
    return created.headers["Location"]


def test_the_app_is_registered_and_its_credentials_written_where_the_settings_read_them(setup, caplog):
    client, emulator, env_file = setup
    caplog.set_level(logging.DEBUG)
    action, form = post_page(client)
    assert urlsplit(action).path == "/settings/apps/new"
    manifest = json.loads(form["manifest"])
    assert manifest["hook_attributes"]["url"] == f"{PUBLIC}/webhook"
    assert manifest["redirect_url"] == f"{PUBLIC}/setup/app/done"
    back = urlsplit(github_creates_the_app(action, form))
    assert f"{back.scheme}://{back.netloc}{back.path}" == f"{PUBLIC}/setup/app/done"

    answer = client.get(f"{back.path}?{back.query}", base_url=PUBLIC)
    page = answer.get_data(as_text=True)
    assert answer.status_code == 200, page
    [created] = emulator.created_apps
    assert [r.path for r in emulator.requests if "conversions" in r.path] == [
        f"/app-manifests/{parse_qs(back.query)['code'][0]}/conversions"
    ]

    key_file = env_file.with_name("perfbot-app.private-key.pem")
    for path in (env_file, key_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    written = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    settings = Settings.from_env(written)
    assert (settings.mode, settings.app_id) == ("app", created["id"])
    assert settings.webhook_secrets == (created["webhook_secret"],)
    assert (settings.oauth_client_id, settings.oauth_client_secret) == (
        created["client_id"],
        created["client_secret"],
    )
    assert settings.sign_in_enabled and settings.public_url == PUBLIC
    # The key GitHub handed over is the App's: GitHub takes a token it signed.
    token = jwt.encode(
        {"iat": 0, "exp": 2**31, "iss": str(settings.app_id)}, settings.private_key, algorithm="RS256"
    )
    assert (
        requests.get(
            f"{emulator.base_url}/app", headers={"Authorization": f"Bearer {token}"}, timeout=10
        ).json()["id"]
        == created["id"]
    )

    for secret in (
        created["webhook_secret"],
        created["client_secret"],
        created["pem"].splitlines()[1],
        written["PERFBOT_SESSION_SECRET"],
    ):
        assert secret not in page and secret not in caplog.text
    assert str(created["id"]) in page and "PERFBOT_WEBHOOK_SECRET" in page and "installations/new" in page


def test_an_organisations_app_is_posted_to_the_organisations_page(setup):
    client, emulator, _ = setup
    action, form = post_page(client, owner="octo-org", name="perfbot octo")
    assert urlsplit(action).path == "/organizations/octo-org/settings/apps/new"
    back = urlsplit(github_creates_the_app(action, form))
    assert client.get(f"{back.path}?{back.query}", base_url=PUBLIC).status_code == 200
    assert emulator.created_apps[0]["owner"]["login"] == "octo-org"
    assert emulator.created_apps[0]["name"] == "perfbot octo"


@pytest.mark.parametrize("tamper", ["other state", "no cookie"])
def test_an_answer_this_browser_did_not_start_registers_nothing(setup, tamper):
    client, emulator, env_file = setup
    action, form = post_page(client)
    back = urlsplit(github_creates_the_app(action, form))
    query = back.query
    if tamper == "other state":
        query = re.sub(r"state=[^&]+", "state=forged", query)
    else:
        client.delete_cookie(app_setup.STATE_COOKIE, domain="perfbot.example.test", path="/setup/app")
    answer = client.get(f"{back.path}?{query}", base_url=PUBLIC)
    assert answer.status_code == 400 and "nothing was registered" in answer.get_data(as_text=True)
    assert not env_file.exists() and emulator.created_apps == []
    assert not any("conversions" in r.path for r in emulator.requests), "the code was never spent"


def test_existing_credentials_are_never_overwritten(setup):
    client, emulator, env_file = setup
    action, form = post_page(client)
    back = urlsplit(github_creates_the_app(action, form))
    env_file.write_text("PERFBOT_APP_ID=1\n")
    answer = client.get(f"{back.path}?{back.query}", base_url=PUBLIC)
    assert answer.status_code == 409 and env_file.read_text() == "PERFBOT_APP_ID=1\n"
    assert emulator.created_apps == []


def test_a_used_code_is_refused_by_github_and_said_so(setup):
    client, emulator, env_file = setup
    action, form = post_page(client)
    back = urlsplit(github_creates_the_app(action, form))
    emulator.manifest_codes.clear()  # GitHub's code ran out
    answer = client.get(f"{back.path}?{back.query}", base_url=PUBLIC)
    assert answer.status_code == 502 and "GitHub refused the code (404)" in answer.get_data(as_text=True)
    assert not env_file.exists()


@pytest.mark.parametrize(
    "query, problem",
    [
        ({"public_url": "javascript:alert(1)"}, "the public address"),
        ({"public_url": PUBLIC, "owner": "-bad/owner"}, "the organisation"),
        ({"public_url": PUBLIC, "name": "x" * 40}, "the App's name"),
        ({"public_url": "https://elsewhere.example.test"}, "the address this page is open at"),
    ],
)
def test_bad_answers_to_the_first_step_are_said_and_post_nothing(setup, code, query, problem):
    client, _, _ = setup
    answer = client.post("/setup/app", data={"code": code, **query}, base_url=PUBLIC)
    page = html.unescape(answer.get_data(as_text=True))
    assert answer.status_code == 400 and f"Check {problem}" in page and 'id="register"' not in page


def test_the_setup_pages_exist_only_while_registering(tmp_path, emulator):
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}", queue_url=f"sqlite:///{tmp_path / 'q.db'}"
    )
    runtime = build(settings)
    try:
        client = create_app(settings, runtime.services).test_client()
        assert client.get("/setup/app").status_code == 404
        assert client.post("/setup/app").status_code == 404
        assert client.get("/setup/app/done?code=x&state=y").status_code == 404
    finally:
        runtime.close()


def test_the_manifest_is_the_one_in_the_repository():
    kept = json.loads((ROOT / "app-manifest.json").read_text())
    served = app_setup.manifest("https://perfbot.example.com", "perfbot")
    for key in (
        "description",
        "hook_attributes",
        "callback_urls",
        "request_oauth_on_install",
        "public",
        "default_permissions",
        "default_events",
    ):
        assert served[key] == kept[key], key


def visitor_registers_an_app_of_their_own(emulator, public: str) -> tuple[str, str]:
    """A visitor posts perfbot's manifest to GitHub with a state of their own choosing, as the
    setup page would have: GitHub creates *their* App and sends them back with its code."""
    action = f"{emulator.base_url}/settings/apps/new?state=visitors-state"
    form = {"manifest": json.dumps(app_setup.manifest(public, "not-perfbot"))}
    back = urlsplit(github_creates_the_app(action, form))
    return back.path, back.query


def test_a_visitor_without_the_console_code_cannot_finish_a_registration(setup):
    """The attack of issue 35: the visitor sets the state cookie themselves (a cookie is whatever
    the client sends), names the public address in it, and completes the flow with their own App:
    the server wrote that App's key and secrets and the visitor's address. Failed before."""
    client, emulator, env_file = setup
    path, query = visitor_registers_an_app_of_their_own(emulator, "https://evil.example.test")
    address = base64.urlsafe_b64encode(b"https://evil.example.test").decode().rstrip("=")
    for cookie in (f"visitors-state.{address}", f"visitors-state.{address}.{'0' * 64}"):
        client.set_cookie(app_setup.STATE_COOKIE, cookie, domain="perfbot.example.test", path="/setup/app")
        answer = client.get(f"{path}?{query}", base_url=PUBLIC)
        assert answer.status_code == 400 and "nothing was registered" in answer.get_data(as_text=True)
    assert not env_file.exists()
    assert not any("conversions" in r.path for r in emulator.requests), "the visitor's code was never spent"


@pytest.mark.parametrize("given", [None, "", "wrong-code", "x" * 200])
def test_a_visitor_without_the_console_code_cannot_start_a_registration(setup, given):
    client, _, env_file = setup
    form = {"public_url": PUBLIC} | ({} if given is None else {"code": given})
    answer = client.post("/setup/app", data=form, base_url=PUBLIC)
    page = html.unescape(answer.get_data(as_text=True))
    assert answer.status_code == 403 and "Check the registration code" in page
    assert 'id="register"' not in page and app_setup.STATE_COOKIE not in answer.headers.get("Set-Cookie", "")
    assert not env_file.exists()


def test_the_code_is_spent_once_an_app_is_registered(setup, code):
    client, _, env_file = setup
    action, form = post_page(client)
    back = urlsplit(github_creates_the_app(action, form))
    assert client.get(f"{back.path}?{back.query}", base_url=PUBLIC).status_code == 200
    env_file.unlink()  # even were the file moved away, the code registered its one App
    again = client.post("/setup/app", data={"code": code, "public_url": PUBLIC}, base_url=PUBLIC)
    assert again.status_code == 409 and 'id="register"' not in again.get_data(as_text=True)
    replay = client.get(f"{back.path}?{back.query}", base_url=PUBLIC)
    assert replay.status_code == 400 and not env_file.exists()


def test_an_existing_settings_file_is_said_before_github_creates_an_app(setup, code):
    """Issue 36: the flow created a second App on GitHub before it said the file existed."""
    client, emulator, env_file = setup
    env_file.write_text("PERFBOT_APP_ID=1\n")
    answer = client.post("/setup/app", data={"code": code, "public_url": PUBLIC}, base_url=PUBLIC)
    page = html.unescape(answer.get_data(as_text=True))
    assert answer.status_code == 409 and "Nothing was asked of GitHub" in page and str(env_file) in page
    assert 'id="register"' not in page and emulator.created_apps == []


def test_the_public_url_set_by_the_operator_is_the_one_registered(tmp_path, emulator, code):
    """With PERFBOT_PUBLIC_URL set, what the form says of the address changes nothing."""
    env_file = tmp_path / "perfbot-app.env"
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}",
        queue_url=f"sqlite:///{tmp_path / 'q.db'}",
        github_api_url=emulator.base_url,
        github_web_url=emulator.base_url,
        register_app_to=str(env_file),
        public_url=PUBLIC,
    )
    runtime = build(settings)
    try:
        client = create_app(settings, runtime.services).test_client()
        action, form = post_page(client, public_url="https://evil.example.test")
        assert json.loads(form["manifest"])["url"] == PUBLIC
        back = urlsplit(github_creates_the_app(action, form))
        assert client.get(f"{back.path}?{back.query}", base_url=PUBLIC).status_code == 200
        assert f"PERFBOT_PUBLIC_URL={PUBLIC}" in env_file.read_text().splitlines()
    finally:
        runtime.close()


def test_serve_prints_the_code_on_the_console_and_not_in_the_log(tmp_path, capsys, caplog):
    from bot.cli import serve

    caplog.set_level(logging.DEBUG)
    serve._registering(Settings(), str(tmp_path / "perfbot-app.env"), "127.0.0.1", 8000)
    try:
        printed = capsys.readouterr().err
        assert setup_code._code and setup_code._code in printed
        assert "http://localhost:8000/setup/app" in printed and setup_code._code not in caplog.text
    finally:
        setup_code.spend()
