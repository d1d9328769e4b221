"""The settings of a GitHub App just registered from its manifest, written where the server reads
them: the private key in a PEM file (read through `PERFBOT_PRIVATE_KEY_PATH`) and the rest in an
environment file of `PERFBOT_*=value` lines (for `set -a; . FILE`, systemd's EnvironmentFile or
`docker run --env-file`), both created 0600 and never over an existing file. What is shown of them
afterwards (`shown`) leaves every secret out."""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from bot.service.ports.app_registration import NewApp
from bot.settings import DEFAULT_API_URL, DEFAULT_WEB_URL

SECRET_NAMES = ("PERFBOT_WEBHOOK_SECRET", "PERFBOT_OAUTH_CLIENT_SECRET", "PERFBOT_SESSION_SECRET")
# What a value may hold so that a shell, systemd and docker all read the line the same way.
_PLAIN = re.compile(r"[A-Za-z0-9._:/@+=~-]+")


class CredentialsNotWritten(Exception):
    """The files could not be written (one exists already, or the folder refuses)."""


@dataclass(frozen=True)
class Written:
    env_file: Path
    key_file: Path
    settings: tuple[tuple[str, str], ...]  # (name, value) as written; secrets included

    @property
    def shown(self) -> tuple[tuple[str, str], ...]:
        """The settings with every secret replaced by where it is."""
        return tuple(
            (name, f"(secret, in {self.env_file})" if name in SECRET_NAMES else value)
            for name, value in self.settings
        )


def key_file_for(env_file: Path) -> Path:
    """``perfbot-app.env`` -> ``perfbot-app.private-key.pem`` beside it."""
    return env_file.with_name(f"{env_file.stem}.private-key.pem")


def check_writable(env_file: Path) -> str | None:
    """What stops `write` before anything is registered (None: nothing)."""
    for path in (env_file, key_file_for(env_file)):
        if path.exists():
            return f"{path} exists: perfbot never overwrites credentials; move it away or name another file"
        if not _PLAIN.fullmatch(str(path)):
            return (
                f"{path}: use a path of letters, digits and ._-/ only (it is written into an "
                "environment file)"
            )
    if not env_file.parent.is_dir():
        return f"{env_file.parent} is not a folder"
    return None


def write(env_file: Path, app: NewApp, public_url: str, api_url: str, web_url: str) -> Written:
    """Create the key file and the environment file (0600, never over existing ones)."""
    problem = check_writable(env_file)
    if problem:
        raise CredentialsNotWritten(problem)
    key_file = key_file_for(env_file)
    settings = [
        ("PERFBOT_APP_ID", str(app.id)),
        ("PERFBOT_PRIVATE_KEY_PATH", str(key_file)),
        ("PERFBOT_WEBHOOK_SECRET", app.webhook_secret),
        ("PERFBOT_OAUTH_CLIENT_ID", app.client_id),
        ("PERFBOT_OAUTH_CLIENT_SECRET", app.client_secret),
        ("PERFBOT_SESSION_SECRET", secrets.token_hex(32)),
        ("PERFBOT_PUBLIC_URL", public_url),
    ]
    if api_url.rstrip("/") != DEFAULT_API_URL:
        settings.append(("PERFBOT_GITHUB_API_URL", api_url.rstrip("/")))
    if web_url.rstrip("/") != DEFAULT_WEB_URL:
        settings.append(("PERFBOT_GITHUB_WEB_URL", web_url.rstrip("/")))
    for name, value in settings:
        if not _PLAIN.fullmatch(value):
            raise CredentialsNotWritten(f"{name} from GitHub is not a plain value; nothing was written")
    _create(key_file, app.pem if app.pem.endswith("\n") else app.pem + "\n")
    try:
        _create(env_file, "".join(f"{name}={value}\n" for name, value in settings))
    except CredentialsNotWritten:
        key_file.unlink(missing_ok=True)
        raise
    return Written(env_file, key_file, tuple(settings))


def _create(path: Path, text: str) -> None:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as error:
        raise CredentialsNotWritten(f"{path}: {error.strerror}") from None
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)
