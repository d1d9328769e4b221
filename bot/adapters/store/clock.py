"""The database's clock, in SQL: what every lease is judged by (taken, renewed, run out, stale),
so that workers whose own clocks disagree still agree on it. A worker whose clock ran 61 s ahead
and judged by it would take a delivery that another is still running under a 60 s lease."""

from __future__ import annotations

from sqlalchemy import DateTime, Float, literal
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement


class _DatabaseNow(FunctionElement):
    type = DateTime(timezone=True)
    inherit_cache = True


def db_now(seconds: float | ColumnElement | None = None) -> _DatabaseNow:
    """The database's time (UTC), or ``seconds`` after it (a bound parameter, or a number)."""
    if seconds is None:
        return _DatabaseNow()
    return _DatabaseNow(seconds if isinstance(seconds, ColumnElement) else literal(float(seconds), Float))


@compiles(_DatabaseNow, "sqlite")
def _sqlite(element, compiler, **kw) -> str:
    # The columns hold 'YYYY-MM-DD HH:MM:SS.ffffff' (SQLAlchemy's format) and compare as text:
    # 'now' has milliseconds, three zeros make it the same text. A statement sees one 'now'.
    offset = ""
    if element.clauses.clauses:
        offset = f", printf('%+.3f seconds', {compiler.process(element.clauses, **kw)})"
    return f"(strftime('%Y-%m-%d %H:%M:%f', 'now'{offset}) || '000')"


@compiles(_DatabaseNow, "postgresql")
def _postgresql(element, compiler, **kw) -> str:
    # statement_timestamp(), not now(): a transaction that waited for a lock judges by when it got it.
    if not element.clauses.clauses:
        return "statement_timestamp()"
    return f"(statement_timestamp() + make_interval(secs => {compiler.process(element.clauses, **kw)}))"
