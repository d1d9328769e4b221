"""SQL storage (SQLAlchemy 2 + Alembic): SQLite by default, PostgreSQL at scale."""
