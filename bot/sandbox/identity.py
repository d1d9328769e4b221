"""The sandbox's GitHub App: its id, a key pair made for the session, and a stand-in that takes
only that App's tokens (as GitHub does), so that the bot runs as it runs against GitHub."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from .github import GitHubEmulator

APP_ID = 4711
APP_SLUG = "perfbot"


@dataclass(frozen=True)
class AppKey:
    private_pem: str
    public_pem: str


def new_key() -> AppKey:
    """A fresh 2048-bit RSA key pair, as GitHub makes for an App."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return AppKey(private, public)


def trust(standin: GitHubEmulator, key: AppKey) -> None:
    """The stand-in takes the App's JSON web tokens (signed with ``key``), issues installation
    tokens for them, and refuses requests that carry none of its tokens."""
    standin.app_id, standin.app_public_key, standin.app_slug = APP_ID, key.public_pem, APP_SLUG
    standin.tokens.add(secrets.token_hex(16))  # with any token known, requests without one are refused
