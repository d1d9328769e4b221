"""Registering perfbot's GitHub App in one click, from its manifest (GitHub's manifest flow),
served while `perfbot serve --register-app FILE` runs, by the operator who started it only:

1. `GET /setup/app` asks for the one-time code that `perfbot serve` printed on its console
   (`setup_code`), the server's public address (fixed when ``PERFBOT_PUBLIC_URL`` is set) and,
   optionally, the organisation that will own the App; `POST /setup/app` checks the code and that
   the settings file can still be written, then shows the manifest and a button that posts it to
   GitHub's *new App* page, with a random ``state`` that a cookie of this browser also holds, with
   the address, signed with the code (HttpOnly, SameSite=Lax: a visitor can neither make one this
   server takes nor choose the address written);
2. GitHub creates the App and sends the browser to `GET /setup/app/done?code=…&state=…`, which
   checks the cookie's signature and the state, trades the code for the App's credentials (through
   the `AppRegistration` port) and writes them where the settings read them (`app_credentials`),
   showing which settings were written and never a secret; the console's code is then spent."""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import re
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from flask import Blueprint, Response, make_response, render_template, request

from bot.service.ports.app_registration import RegistrationFailed

from . import app_credentials, headers, setup_code, state

log = logging.getLogger("perfbot.app_setup")
bp = Blueprint("app_setup", __name__)
STATE_COOKIE = "perfbot_app_setup"
STATE_LIFETIME_S = 3600  # GitHub's code is valid for an hour too
_OWNER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,33}")  # GitHub App names: at most 34 characters
_WRONG_CODE = (
    "the registration code: the one `perfbot serve --register-app` printed on its console when it "
    "started (only the operator who started it may register the App)"
)

# What perfbot asks for; app-manifest.json in the repository holds the same (a test keeps them so).
PERMISSIONS = {
    "metadata": "read",
    "contents": "read",
    "pull_requests": "write",
    "issues": "write",
    "checks": "write",
    "actions": "write",
}
EVENTS = ["pull_request", "pull_request_review", "issue_comment", "workflow_run"]
DESCRIPTION = (
    "Performance review of every pull request of a GPU inference engine: a risk review (one "
    "sticky comment, a check run, a perf-risk label), and benchmarks on your GPU runners on "
    "/bench or for risky changes, judged base against head."
)


def manifest(public_url: str, name: str) -> dict[str, Any]:
    """The App perfbot needs, delivering to and signing in at ``public_url``."""
    return {
        "name": name,
        "url": public_url,
        "description": DESCRIPTION,
        "hook_attributes": {"url": f"{public_url}/webhook", "active": True},
        "redirect_url": f"{public_url}/setup/app/done",
        "callback_urls": [f"{public_url}/signin/callback"],
        "request_oauth_on_install": False,
        "public": False,
        "default_permissions": dict(PERMISSIONS),
        "default_events": list(EVENTS),
    }


def public_address(text: str) -> str | None:
    """``text`` as an http(s) origin with an optional path and no query (None: not one)."""
    text = text.strip().rstrip("/")
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username
        or parts.password
        or not text.isprintable()
        or " " in text
    ):
        return None
    return text


@bp.record_once
def _no_csrf_token(setup_state: Any) -> None:
    # The form carries the operator's code, which a page of another site cannot know either; and
    # the dashboard's CSRF token lives in a per-process session that another web worker rejects.
    csrf = setup_state.app.extensions.get("csrf")
    if csrf is not None:
        csrf.exempt(bp)


@bp.get("/setup/app")
def ask() -> Response:
    """The form: the operator's code, the public address, the organisation, the App's name."""
    settings = state.current().settings
    values = {
        "public_url": settings.public_url or request.args.get("public_url", ""),
        "owner": request.args.get("owner", ""),
        "name": request.args.get("name", "") or "perfbot",
    }
    return _ask(values, [], 200)


@bp.post("/setup/app")
def start() -> Response | tuple[str, int]:
    settings = state.current().settings
    form = request.form
    # PERFBOT_PUBLIC_URL, when the operator set it, is where the server lives: no form changes it.
    typed = settings.public_url or form.get("public_url", "")
    public = public_address(typed)
    owner = form.get("owner", "").strip()
    name = form.get("name", "").strip() or "perfbot"
    values = {"public_url": typed, "owner": owner, "name": name}
    if not setup_code.active():
        return _failed("This server registered an App already: restart it with the settings written.", 409)
    if not setup_code.matches(form.get("code", "")):
        log.warning("a registration was refused: the code given is not the one on the console")
        return _ask(values, [_WRONG_CODE], 403)
    problem = app_credentials.check_writable(Path(settings.register_app_to or ""))
    if problem:  # said before GitHub creates an App whose credentials could not be kept
        return _failed(f"Nothing was asked of GitHub: {problem}.", 409)
    problems = []
    if public is None:
        problems.append(
            "the public address: an http(s):// URL that GitHub and your browser reach, without a query"
        )
    if owner and not _OWNER.fullmatch(owner):
        problems.append("the organisation: a GitHub login (letters, digits and hyphens)")
    if not _NAME.fullmatch(name):
        problems.append("the App's name: up to 34 letters, digits, spaces and ._-")
    if public is not None and urlsplit(public).hostname != urlsplit(request.host_url).hostname:
        # GitHub sends the browser back to the public address, where the state's cookie must be.
        problems.append(
            f"the address this page is open at: open it at {public}/setup/app, where GitHub "
            "will send you back"
        )
    if public is None or problems:
        return _ask(values, problems, 400)
    token = secrets.token_urlsafe(32)
    where = f"/organizations/{owner}/settings/apps/new" if owner else "/settings/apps/new"
    action = f"{settings.github_web_url}{where}?{urlencode({'state': token})}"
    body = manifest(public, name)
    response = make_response(
        render_template(
            "app_setup.html",
            step="post",
            values=values,
            action=action,
            manifest=body,
            env_file=settings.register_app_to,
        )
    )
    # The address travels with the state, signed with the operator's code: a visitor can set a
    # cookie of their own, but not one this server takes.
    address = _encode(public)
    response.set_cookie(
        STATE_COOKIE,
        f"{token}.{address}.{setup_code.sign(token, address)}",
        max_age=STATE_LIFETIME_S,
        httponly=True,
        samesite="Lax",
        secure=request.is_secure,
        path="/setup/app",
    )
    response.headers["Cache-Control"] = "no-store"
    # The one form that leaves this site goes to GitHub, and GitHub's answer comes back here.
    response.headers["Content-Security-Policy"] = headers.CONTENT_SECURITY_POLICY.replace(
        "form-action 'self'", f"form-action 'self' {_origin(settings.github_web_url)} {_origin(public)}"
    )
    return response


@bp.get("/setup/app/done")
def done() -> tuple[str, int] | Response:
    app_state = state.current()
    settings = app_state.settings
    token, address, mac = (request.cookies.get(STATE_COOKIE, "").split(".") + ["", "", ""])[:3]
    given, public = request.args.get("state", ""), public_address(_decode(address))
    if (
        not token
        or public is None
        or not setup_code.verify(mac, token, address)
        or not hmac.compare_digest(token.encode(), given.encode())
    ):
        return _failed(
            "This answer does not belong to a registration started in this browser with the "
            "code on the server's console (the state does not match, or the hour it had ran out, "
            "or a registration was completed already): nothing was registered here. "
            "Start again from /setup/app.",
            400,
        )
    registration, env_file = app_state.services.app_registration, settings.register_app_to
    if registration is None or env_file is None:
        return _failed("This server is not registering an App (perfbot serve --register-app FILE).", 404)
    problem = app_credentials.check_writable(Path(env_file))
    if problem:
        return _failed(f"Nothing was asked of GitHub: {problem}.", 409)
    try:
        app = registration.convert(request.args.get("code", ""))
        written = app_credentials.write(
            Path(env_file), app, public, settings.github_api_url, settings.github_web_url
        )
    except (RegistrationFailed, app_credentials.CredentialsNotWritten) as error:
        return _failed(f"The App may exist on GitHub, but its credentials were not kept: {error}", 502)
    setup_code.spend()  # once: the state cannot be played again here
    install = f"{app.html_url}/installations/new"
    response = make_response(
        render_template(
            "app_setup.html",
            step="done",
            app=app,
            written=written,
            install=install,
            values={},
            env_file=env_file,
        )
    )
    response.delete_cookie(STATE_COOKIE, path="/setup/app")
    return response


def _ask(values: dict[str, str], problems: list[str], status: int) -> Response:
    settings = state.current().settings
    page = render_template(
        "app_setup.html",
        step="ask",
        values=values,
        problems=problems,
        fixed_public_url=bool(settings.public_url),
        env_file=settings.register_app_to,
    )
    return make_response(page, status)


def _encode(text: str) -> str:
    """The public address, kept beside the state in the cookie (the manifest named it)."""
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode(text: str) -> str:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return ""


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _failed(message: str, status: int) -> tuple[str, int]:
    return render_template(
        "app_setup.html",
        step="failed",
        message=message,
        values={},
        env_file=state.current().settings.register_app_to,
    ), status
