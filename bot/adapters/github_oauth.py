"""Dashboard sign-in through the GitHub App's user authorization (the OAuth web flow): send the
browser to GitHub, exchange the code it brings back for a user token, ask GitHub whose it is,
and drop the token. Permissions are then checked as the App, never with the user's token, so
the server keeps no user credentials."""

from __future__ import annotations

from urllib.parse import urlencode

import requests

from bot.service.ports.sign_in import SignIn, SignInFailed


class GitHubSignIn(SignIn):
    def __init__(self, client_id: str, client_secret: str, web_url: str, api_url: str, timeout: float = 10):
        self.client_id, self.client_secret = client_id, client_secret
        self.web_url, self.api_url, self.timeout = web_url.rstrip("/"), api_url.rstrip("/"), timeout
        self.http = requests.Session()

    def authorize_url(self, state: str, redirect_uri: str) -> str:
        query = urlencode(
            {
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "state": state,
                "allow_signup": "false",
            }
        )
        return f"{self.web_url}/login/oauth/authorize?{query}"

    def login_for(self, code: str, redirect_uri: str) -> str:
        try:
            answer = self.http.post(
                f"{self.web_url}/login/oauth/access_token",
                data={
                    "client_id": self.client_id,
                    "client_secret": self.client_secret,
                    "code": code,
                    "redirect_uri": redirect_uri,
                },
                headers={"Accept": "application/json"},
                timeout=self.timeout,
            )
            grant = answer.json() if answer.ok else {}
            token = grant.get("access_token")
            if not token:
                raise SignInFailed(
                    grant.get("error_description")
                    or grant.get("error")
                    or f"GitHub answered {answer.status_code}"
                )
            user = self.http.get(
                f"{self.api_url}/user",
                headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"},
                timeout=self.timeout,
            )
            login = user.json().get("login") if user.ok else None
        except (requests.RequestException, ValueError) as error:
            raise SignInFailed(f"GitHub could not be asked ({type(error).__name__})") from None
        if not isinstance(login, str) or not login:
            raise SignInFailed(f"GitHub did not say who signed in ({user.status_code})")
        return login
