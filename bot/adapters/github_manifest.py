"""The last step of registering a GitHub App from a manifest: trade the one-time code for the
App's id, private key, client secret and webhook secret (`POST /app-manifests/{code}/conversions`,
which needs no credentials: the code is one)."""

from __future__ import annotations

import re
from urllib.parse import quote

import requests

from bot.service.ports.app_registration import AppRegistration, NewApp, RegistrationFailed

_CODE = re.compile(r"[A-Za-z0-9_-]{1,100}")


class GitHubAppRegistration(AppRegistration):
    def __init__(self, api_url: str, timeout: float = 10):
        self.api_url, self.timeout = api_url.rstrip("/"), timeout
        self.http = requests.Session()

    def convert(self, code: str) -> NewApp:
        if not _CODE.fullmatch(code):
            raise RegistrationFailed("GitHub's code is missing or malformed")
        try:
            answer = self.http.post(
                f"{self.api_url}/app-manifests/{quote(code, safe='')}/conversions",
                headers={"Accept": "application/vnd.github+json"},
                timeout=self.timeout,
            )
            data = answer.json() if answer.status_code == 201 else None
        except (requests.RequestException, ValueError) as error:
            raise RegistrationFailed(f"GitHub could not be asked ({type(error).__name__})") from None
        if not isinstance(data, dict):
            raise RegistrationFailed(
                f"GitHub refused the code ({answer.status_code}): it is valid once, "
                "for an hour; register again"
            )
        try:
            owner = data.get("owner") or {}
            return NewApp(
                id=int(data["id"]),
                slug=str(data["slug"]),
                html_url=str(data["html_url"]),
                owner=str(owner.get("login", "")),
                client_id=str(data["client_id"]),
                client_secret=str(data["client_secret"]),
                webhook_secret=str(data["webhook_secret"] or ""),
                pem=str(data["pem"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            raise RegistrationFailed("GitHub's answer lacks the App's credentials") from None
