"""Who a dashboard visitor is, asked of GitHub (`SignIn`), and its one failure (`SignInFailed`)."""

from __future__ import annotations

from abc import ABC, abstractmethod


class SignIn(ABC):
    """Sign-in to the dashboard through the GitHub App's user authorization (OAuth web flow)."""

    @abstractmethod
    def authorize_url(self, state: str, redirect_uri: str) -> str:
        """Where to send the browser to ask GitHub who the user is."""

    @abstractmethod
    def login_for(self, code: str, redirect_uri: str) -> str:
        """The login of the user who authorized, from the code GitHub sent back;
        `SignInFailed` when GitHub refuses the code."""


class SignInFailed(Exception):
    """GitHub did not confirm the sign-in (a bad, used or expired code, or GitHub unreachable)."""
