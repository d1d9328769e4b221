"""The test processes that `make test` runs side by side (pytest-xdist) never share a Redis
database: each flushes its own between tests."""

from __future__ import annotations

import pytest

from tests.support.fixtures import _worker_redis_url

URL = "redis://:secret@127.0.0.1:6390/0"


def test_alone_the_url_is_used_as_given(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert _worker_redis_url(URL) == URL


@pytest.mark.parametrize(("worker", "database"), [("gw0", 1), ("gw1", 2), ("gw14", 15)])
def test_each_worker_has_a_database_of_its_own(monkeypatch, worker, database):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    assert _worker_redis_url(URL) == f"redis://:secret@127.0.0.1:6390/{database}"
    assert _worker_redis_url("redis://127.0.0.1:6390") == f"redis://127.0.0.1:6390/{database}"


def test_a_worker_beyond_redis_s_databases_fails_with_what_to_do(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw15")
    with pytest.raises(pytest.fail.Exception, match="16 databases|-n 15 or fewer"):
        _worker_redis_url(URL)
