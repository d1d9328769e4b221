"""Alembic migration environment of the perfbot database (packaged with the code)."""
