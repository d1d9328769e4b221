"""Shared pytest fixtures for the server's tests: databases (SQLite and PostgreSQL), Redis, the
GitHub API emulator and GitHub's payloads. Imported by the conftest of each test folder.

PostgreSQL and Redis come from PERFBOT_TEST_POSTGRES_URL and PERFBOT_TEST_REDIS_URL (.ci/run
starts both). Locally a missing one skips its tests; in CI (CI=true) it fails them.
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit

import pytest
from sqlalchemy import create_engine, text

from bot.adapters.store.sql import SqlStore, make_engine
from bot.adapters.store.tables import Base

from . import github_data
from .github_emulator import GitHubEmulator
from .missing import skip_or_fail


def _service_url(name: str) -> str:
    url = os.environ.get(name)
    if url:
        return url
    skip_or_fail(f"{name} is not set (.ci/run starts the service; or set it to a scratch server)")


@pytest.fixture(scope="session")
def postgres_database() -> str:
    """A scratch database on the test PostgreSQL server, migrated once, dropped at the end."""
    admin_url = _service_url("PERFBOT_TEST_POSTGRES_URL")
    name = f"perfbot_t_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin.url.set(database=name).render_as_string(hide_password=False)
    SqlStore.connect(url).engine.dispose()
    yield url
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path) -> str:
    """Each test using it runs twice: on a fresh SQLite file and on (emptied) PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'perfbot.db'}"
    url = request.getfixturevalue("postgres_database")
    engine = make_engine(url)
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())
    engine.dispose()
    return url


@pytest.fixture
def store(database_url) -> SqlStore:
    store = SqlStore.connect(database_url)
    yield store
    store.engine.dispose()


def _worker_redis_url(url: str) -> str:
    """The Redis database of this pytest process: under pytest-xdist each worker flushes its own
    (gw0 takes 1, gw1 takes 2, ...), never another worker's keys; alone, the URL's own."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return url
    index = 1 + int(worker[2:])
    if index > 15:  # Redis has 16 databases unless configured otherwise
        pytest.fail(f"pytest-xdist worker {worker}: Redis has no database {index}; run with -n 15 or fewer")
    return urlsplit(url)._replace(path=f"/{index}").geturl()


@pytest.fixture
def redis_url() -> str:
    import redis

    url = _worker_redis_url(_service_url("PERFBOT_TEST_REDIS_URL"))
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


@pytest.fixture(scope="session")
def github_test_data():
    try:
        github_data.ensure()
    except github_data.MissingData as error:
        skip_or_fail(str(error))
    return github_data


@pytest.fixture
def emulator(github_test_data) -> GitHubEmulator:
    emulator = GitHubEmulator().start()
    yield emulator
    emulator.stop()
    assert emulator.invalid == [], "requests that break GitHub's REST description"
