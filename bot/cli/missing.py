"""Which install extra a missing third-party module comes from, for a one-line error instead of a
traceback: a bare install has no NumPy or SciPy (`compare`, `bench`, `bisect` need the ``runner``
extra, which the ``server`` extra also holds), a runner install no Flask or SQLAlchemy (`serve`,
`worker` need ``server``).

Imports nothing heavy, so the command line can use it after any import failed.
"""

from __future__ import annotations

# Top-level module -> the extra of perfbot that installs it (tests check it against pyproject.toml).
MODULE_EXTRAS = {
    "numpy": "runner",
    "scipy": "runner",
    "flask": "server",
    "gunicorn": "server",
    "github": "server",
    "requests": "server",
    "sqlalchemy": "server",
    "alembic": "server",
    "psycopg": "server",
    "huey": "server",
    "redis": "server",
    "prometheus_client": "server",
    "flask_wtf": "server",
    "ruptures": "server",
}


def hint(error: ModuleNotFoundError) -> str | None:
    """The message for a module an extra would have installed; None for any other missing module."""
    module = (error.name or "").partition(".")[0]
    extra = MODULE_EXTRAS.get(module)
    if extra is None:
        return None
    return (
        f"this command needs the Python module '{module}', which perfbot's '{extra}' extra installs: "
        f"pip install 'perfbot[{extra}]'"
    )
