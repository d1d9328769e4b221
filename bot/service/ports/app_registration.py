"""A GitHub App registered from a manifest (`AppRegistration`): the one-time code GitHub sends
back traded for the new App's credentials (`NewApp`), and its one failure (`RegistrationFailed`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field


@dataclass(frozen=True)
class NewApp:
    """What GitHub hands over once for an App made from a manifest; the secrets never print."""

    id: int
    slug: str
    html_url: str
    owner: str
    client_id: str
    client_secret: str = field(repr=False)
    webhook_secret: str = field(repr=False)
    pem: str = field(repr=False)


class AppRegistration(ABC):
    @abstractmethod
    def convert(self, code: str) -> NewApp:
        """The App's credentials for the ``code`` GitHub redirected with (`POST
        /app-manifests/{code}/conversions`, valid once, for an hour); `RegistrationFailed` when
        GitHub refuses it or cannot be reached."""


class RegistrationFailed(Exception):
    """GitHub did not hand over the new App's credentials (a used or expired code, or no answer)."""
