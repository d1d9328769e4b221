"""Server settings: the one place that reads the PERFBOT_* environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_WEB_URL = "https://github.com"
DEFAULT_DATABASE_URL = "sqlite:///perfbot.db"
ANONYMOUS_MODES = ("public", "all", "none")
MIN_SESSION_SECRET = 32


class SettingsError(ValueError):
    """An environment variable that is missing, malformed or contradicts another."""


@dataclass(frozen=True)
class Settings:
    """Everything the server, the worker and the GitHub client need, read once at start-up."""

    webhook_secrets: tuple[str, ...] = ()
    app_id: int | None = None
    private_key: str | None = field(default=None, repr=False)
    github_token: str | None = field(default=None, repr=False)
    github_api_url: str = DEFAULT_API_URL
    database_url: str = DEFAULT_DATABASE_URL
    queue_url: str | None = None
    writes_per_minute: int = 80
    log_level: str = "INFO"
    oauth_client_id: str | None = None
    oauth_client_secret: str | None = field(default=None, repr=False)
    session_secret: str | None = field(default=None, repr=False)
    github_web_url: str = DEFAULT_WEB_URL
    public_url: str | None = None
    dashboard_anonymous: str = "public"
    # `perfbot serve --register-app FILE`: serve /setup/app and write the new App's settings there.
    register_app_to: str | None = None

    @property
    def sign_in_enabled(self) -> bool:
        """Dashboard sign-in (GitHub App user authorization) is configured."""
        return bool(self.oauth_client_id and self.oauth_client_secret and self.session_secret)

    @property
    def app_credentials(self) -> tuple[int, str] | None:
        """The GitHub App's id and private key, when both are set."""
        if self.app_id is not None and self.private_key:
            return self.app_id, self.private_key
        return None

    @property
    def mode(self) -> str:
        """'app' (GitHub App: check runs), 'token' (commit statuses) or 'none' (intake only)."""
        if self.app_credentials is not None:
            return "app"
        return "token" if self.github_token else "none"

    @property
    def resolved_queue_url(self) -> str:
        """The queue: ``PERFBOT_QUEUE_URL``, else a SQLite file beside the database."""
        if self.queue_url:
            return self.queue_url
        return f"sqlite:///{queue_file_beside(self.database_url)}"

    @property
    def queue_embedded(self) -> bool:
        """The queue is a SQLite file (`perfbot serve` runs its consumers), not a Redis server."""
        return not self.resolved_queue_url.startswith(("redis://", "rediss://"))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        secrets = tuple(s.strip() for s in env.get("PERFBOT_WEBHOOK_SECRET", "").split(",") if s.strip())
        return cls(
            webhook_secrets=secrets,
            app_id=_int(env, "PERFBOT_APP_ID"),
            private_key=_private_key(env),
            github_token=env.get("PERFBOT_GITHUB_TOKEN") or None,
            github_api_url=(env.get("PERFBOT_GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
            database_url=_database_url(env.get("PERFBOT_DATABASE_URL") or DEFAULT_DATABASE_URL),
            queue_url=env.get("PERFBOT_QUEUE_URL") or None,
            writes_per_minute=_int(env, "PERFBOT_WRITES_PER_MINUTE") or 80,
            log_level=(env.get("PERFBOT_LOG_LEVEL") or "INFO").upper(),
            oauth_client_id=env.get("PERFBOT_OAUTH_CLIENT_ID") or None,
            oauth_client_secret=env.get("PERFBOT_OAUTH_CLIENT_SECRET") or None,
            session_secret=env.get("PERFBOT_SESSION_SECRET") or None,
            github_web_url=(env.get("PERFBOT_GITHUB_WEB_URL") or DEFAULT_WEB_URL).rstrip("/"),
            public_url=(env.get("PERFBOT_PUBLIC_URL") or "").rstrip("/") or None,
            dashboard_anonymous=(env.get("PERFBOT_DASHBOARD_ANONYMOUS") or "public").strip().lower(),
        ).checked()

    def checked(self) -> Settings:
        if (self.app_id is None) != (self.private_key is None):
            raise SettingsError("PERFBOT_APP_ID and PERFBOT_PRIVATE_KEY(_PATH) must be set together")
        if self.queue_url and not self.queue_url.startswith(("redis://", "rediss://", "sqlite:///")):
            raise SettingsError(
                f"PERFBOT_QUEUE_URL: expected redis://... or sqlite:///..., "
                f"got {self.queue_url.split(':', 1)[0]}:..."
            )
        if (self.oauth_client_id is None) != (self.oauth_client_secret is None):
            raise SettingsError(
                "PERFBOT_OAUTH_CLIENT_ID and PERFBOT_OAUTH_CLIENT_SECRET must be set together"
            )
        if self.oauth_client_id and not self.session_secret:
            raise SettingsError(
                "PERFBOT_SESSION_SECRET is required for dashboard sign-in (PERFBOT_OAUTH_CLIENT_ID)"
            )
        if self.oauth_client_id and not self.public_url:
            raise SettingsError(
                "PERFBOT_PUBLIC_URL is required for dashboard sign-in (PERFBOT_OAUTH_CLIENT_ID): "
                "GitHub sends the sign-in back to it"
            )
        if self.session_secret is not None and len(self.session_secret) < MIN_SESSION_SECRET:
            raise SettingsError(f"PERFBOT_SESSION_SECRET: expected at least {MIN_SESSION_SECRET} characters")
        if self.dashboard_anonymous not in ANONYMOUS_MODES:
            raise SettingsError(
                f"PERFBOT_DASHBOARD_ANONYMOUS: expected one of {', '.join(ANONYMOUS_MODES)}, "
                f"got {self.dashboard_anonymous!r}"
            )
        urls = (("PERFBOT_GITHUB_WEB_URL", self.github_web_url), ("PERFBOT_PUBLIC_URL", self.public_url))
        for name, url in urls:
            if url is not None and not url.startswith(("https://", "http://")):
                raise SettingsError(f"{name}: expected an http(s):// URL, got {url!r}")
        return self


# The databases perfbot stores in, with the driver it installs for each.
_DATABASES = {"sqlite": ("pysqlite",), "postgresql": ("psycopg",)}


def _database_url(text: str) -> str:
    """``text`` as a URL SQLAlchemy opens with a driver perfbot installs: a bare ``postgresql://``
    (or ``postgres://``) is given psycopg, which SQLAlchemy would otherwise take to mean psycopg2."""
    try:
        url = make_url(text)
    except ArgumentError:
        raise SettingsError(f"PERFBOT_DATABASE_URL: not a database URL: {text[:80]!r}") from None
    backend = "postgresql" if url.drivername in ("postgres", "postgresql") else url.get_backend_name()
    if backend not in _DATABASES:
        raise SettingsError(
            f"PERFBOT_DATABASE_URL: perfbot stores in SQLite (sqlite:///FILE) or PostgreSQL "
            f"(postgresql+psycopg://...), not {backend}"
        )
    if backend == "postgresql" and url.drivername in ("postgres", "postgresql"):
        return url.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if url.get_driver_name() not in _DATABASES[backend]:
        expected = "sqlite:///FILE" if backend == "sqlite" else "postgresql+psycopg://..."
        raise SettingsError(
            f"PERFBOT_DATABASE_URL: the {url.get_driver_name()} driver is not installed; expected {expected}"
        )
    return text


def check_sqlite_folder(database_url: str) -> None:
    """`SettingsError` when a SQLite database's folder, which SQLite cannot make, is missing or
    cannot be written: a mistake for `perfbot serve` and `perfbot worker` to name at start (SQLite
    says only "unable to open database file"). An existing file is left to the store, which tells a
    read-only one from one that is away (503 until it is back); so is a server database."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return
    database = Path(url.database)
    folder = database.parent
    if not folder.is_dir():
        raise SettingsError(
            f"PERFBOT_DATABASE_URL: the folder {folder} does not exist "
            "(SQLite makes the file, not its folder)"
        )
    if not database.exists() and not os.access(folder, os.W_OK | os.X_OK):
        raise SettingsError(
            f"PERFBOT_DATABASE_URL: the folder {folder} is not writable, "
            f"so {database.name} cannot be made there"
        )


def queue_file_beside(database_url: str) -> str:
    """``perfbot.db`` -> ``perfbot.queue.db`` in the same folder; a server database -> the cwd."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        db = Path(url.database)
        return str(db.with_name(db.stem + ".queue.db"))
    return "perfbot.queue.db"


def _int(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name, "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise SettingsError(f"{name}: expected an integer, got {value!r}") from None


def _private_key(env: Mapping[str, str]) -> str | None:
    if env.get("PERFBOT_PRIVATE_KEY"):
        return env["PERFBOT_PRIVATE_KEY"].replace("\\n", "\n")
    path = env.get("PERFBOT_PRIVATE_KEY_PATH")
    if not path:
        return None
    try:
        return Path(path).read_text()
    except OSError as error:
        raise SettingsError(f"PERFBOT_PRIVATE_KEY_PATH: cannot read {path} ({error.strerror})") from None
