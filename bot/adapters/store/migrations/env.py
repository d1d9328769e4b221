"""Alembic environment: migrate the connection that `bot.adapters.store.migrate` hands over."""

from alembic import context

from bot.adapters.store.tables import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
