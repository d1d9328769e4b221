"""The latest per-step map of each repository and suite, stored with a completed run's results."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from sqlalchemy import text

from bot.core import stepmap
from bot.service.records import BenchRequest, StoredStepMap

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def _map(commit: str, suite: str = "verify-step", share: float = 0.03) -> stepmap.StepMap:
    return stepmap.parse(
        {
            "schema": 1,
            "commit": commit,
            "suite": suite,
            "step": "verify step",
            "steps": 4,
            "source": "sys.monitoring",
            "kernels": [],
            "functions": [
                {"path": "a.py", "function": "f", "line": 1, "calls_per_step": 2, "host_share": share}
            ],
        }
    )


def _completed(store, correlation_id: str) -> BenchRequest:
    request, _ = store.benchmarks.open(
        BenchRequest(
            correlation_id=correlation_id,
            repo="o/r",
            installation_id=1,
            number=None,
            base_sha="b" * 40,
            head_sha="a" * 40,
            suites=("verify-step",),
            rounds=5,
            max_rounds=None,
            trigger="merge",
            requested_by="#7",
            comment_id=None,
            status="requested",
            created_at=NOW,
        )
    )
    return replace(request, status="completed", conclusion="success", completed_at=NOW)


def test_a_completed_run_stores_its_maps_and_the_latest_replaces_its_suites(store):
    assert store.benchmarks.step_map("o/r") is None
    first = StoredStepMap("o/r", "main", _map("a" * 40))
    assert store.benchmarks.complete(_completed(store, "pb-1"), [], [], "run:1", [first])
    assert store.benchmarks.step_map("o/r") == first
    assert store.benchmarks.step_map("o/other") is None
    later = StoredStepMap("o/r", "trunk", _map("c" * 40, share=0.5))
    assert not store.benchmarks.complete(_completed(store, "pb-1"), [], [], "run:1", [later])  # done before
    assert store.benchmarks.step_map("o/r") == first
    assert store.benchmarks.complete(_completed(store, "pb-2"), [], [], "run:2", [later])
    assert store.benchmarks.step_map("o/r") == later
    with store.engine.connect() as connection:
        rows = connection.execute(text("select repo, suite, branch, commit_sha from step_maps")).fetchall()
    assert [tuple(r) for r in rows] == [("o/r", "verify-step", "trunk", "c" * 40)]


def test_the_map_stored_last_of_any_suite_is_the_one_read(store):
    quick = StoredStepMap("o/r", "main", _map("d" * 40, suite="quick"))
    verify = StoredStepMap("o/r", "main", _map("e" * 40))
    assert store.benchmarks.complete(_completed(store, "pb-1"), [], [], "run:1", [quick, verify])
    assert store.benchmarks.step_map("o/r") == verify
    with store.engine.begin() as connection:
        connection.execute(text("update step_maps set body = '{\"schema\": 99}' where suite = 'verify-step'"))
    assert store.benchmarks.step_map("o/r") is None  # a map this version cannot read is no map
