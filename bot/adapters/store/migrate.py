"""Bring a database to the newest schema with the packaged Alembic migrations."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text

# Any constant works; it only has to be the same in every replica that migrates at start-up.
_PG_LOCK = 0x70657266


def upgrade(engine: Engine) -> None:
    """Apply every migration not yet applied; safe to call from several replicas at once."""
    config = Config()
    config.set_main_option("script_location", "bot.adapters.store:migrations")
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
