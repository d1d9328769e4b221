"""Registering perfbot's GitHub App in one click, from its manifest (GitHub's manifest flow),
served while `perfbot serve --register-app FILE` runs:

1. `GET /setup/app` asks for the server's public address (and, optionally, the organisation that
   will own the App), then shows the manifest and a button that posts it to GitHub's *new App*
   page for the user's account or the organisation, with a random ``state`` that a cookie of this
   browser also holds (SameSite=Lax, HttpOnly: a page of another site cannot set or read it);
2. GitHub creates the App and sends the browser to `GET /setup/app/done?code=…&state=…`, which
   checks the state against the cookie, trades the code for the App's credentials (through the
   `AppRegistration` port) and writes them where the settings read them (`app_credentials`),
   showing which settings were written and never a secret."""

from __future__ import annotations

import base64
import binascii
import hmac
import re
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from flask import Blueprint, Response, make_response, render_template, request

from bot.service.ports.app_registration import RegistrationFailed

from . import app_credentials, headers, state

bp = Blueprint("app_setup", __name__)
STATE_COOKIE = "perfbot_app_setup"
STATE_LIFETIME_S = 3600  # GitHub's code is valid for an hour too
_OWNER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,33}")  # GitHub App names: at most 34 characters

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


@bp.get("/setup/app")
def start() -> Response:
    settings = state.current().settings
    public = public_address(request.args.get("public_url") or settings.public_url or "")
    owner = request.args.get("owner", "").strip()
    name = request.args.get("name", "").strip() or "perfbot"
    problems = []
    if "public_url" in request.args and public is None:
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
    values = {
        "public_url": public or request.args.get("public_url") or settings.public_url or "",
        "owner": owner,
        "name": name,
    }
    if public is None or problems or "edit" in request.args:
        page = render_template(
            "app_setup.html", step="ask", values=values, problems=problems, env_file=settings.register_app_to
        )
        return make_response(page, 400 if problems else 200)
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
    response.set_cookie(
        STATE_COOKIE,
        f"{token}.{_encode(public)}",
        max_age=STATE_LIFETIME_S,
        httponly=True,
        samesite="Lax",
        secure=request.is_secure,
        path="/setup/app",
    )
    # The one form that leaves this site goes to GitHub, and GitHub's answer comes back here.
    response.headers["Content-Security-Policy"] = headers.CONTENT_SECURITY_POLICY.replace(
        "form-action 'self'", f"form-action 'self' {_origin(settings.github_web_url)} {_origin(public)}"
    )
    return response


@bp.get("/setup/app/done")
def done() -> tuple[str, int] | Response:
    app_state = state.current()
    settings = app_state.settings
    expected, _, address = request.cookies.get(STATE_COOKIE, "").partition(".")
    given, public = request.args.get("state", ""), public_address(_decode(address))
    if not expected or public is None or not hmac.compare_digest(expected.encode(), given.encode()):
        return _failed(
            "This answer does not belong to a registration started in this browser (the state "
            "does not match, or the hour it had ran out): nothing was registered here. "
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
