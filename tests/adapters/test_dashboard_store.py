"""The store's dashboard queries, on SQLite and PostgreSQL: merges take their benchmark outcome
and acknowledgement from rows appended by others, filters and pages, triage, series."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert

from bot.adapters.store.tables import AckRow, Base, BenchResultRow, MetricPointRow
from bot.service.ports.dashboard import MergeQuery, TriageEvent
from bot.service.records import Merge, Reason, Repository

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def merge(
    number: int, level: str | None = "high", score: int | None = 80, repo: str = "o/a", hours: int = 0, **kw
) -> Merge:
    return Merge(
        repo=repo,
        number=number,
        title=f"PR {number}",
        merge_sha=f"m{number:039d}",
        head_sha=f"h{number:039d}",
        score=score,
        level=level,
        merged_at=T0 + timedelta(hours=hours or number),
        author="alice",
        url=f"https://github.com/{repo}/pull/{number}",
        reasons=(Reason("path.pynccl", 40, "NCCL communicator wrapper [path.pynccl, +40]"),),
        **kw,
    )


def add_result(store, repo: str, number: int | None, head: str, verdict: str, change: float = 0.1) -> None:
    with store.engine.begin() as connection:
        connection.execute(
            insert(Base.metadata.tables[BenchResultRow.__tablename__]),
            {
                "repo": repo,
                "number": number,
                "suite": "verify-step",
                "base_sha": "b" * 40,
                "head_sha": head,
                "verdict": verdict,
                "headline_metric": "step_ms",
                "headline_change": change,
                "comparison": json.dumps({"verdict": verdict, "metrics": []}),
                "on_default_branch": number is None,
                "created_at": T0,
            },
        )


def add_ack(store, repo: str, number: int) -> None:
    with store.engine.begin() as connection:
        connection.execute(
            insert(Base.metadata.tables[AckRow.__tablename__]),
            {
                "repo": repo,
                "number": number,
                "head_sha": None,
                "user": "bob",
                "reason": "expected",
                "comment_id": None,
                "created_at": T0,
            },
        )


def numbers(page) -> list[int]:
    return [m.number for m in page.items]


def test_a_merge_is_flagged_by_risk_or_by_a_benchmark_verdict_other_than_unchanged(store):
    store.dashboard.record_merge(merge(1, "high"))
    store.dashboard.record_merge(merge(2, "low", 5))
    store.dashboard.record_merge(merge(3, "low", 5))
    store.dashboard.record_merge(merge(4, "none", 0))
    add_result(store, "o/a", 2, "h" + "2".rjust(39, "0"), "regression", 0.3)
    add_result(store, "o/a", None, "m" + "3".rjust(39, "0"), "unchanged", 0.0)  # on the merge commit
    page = store.dashboard.flagged_merges(MergeQuery())
    assert numbers(page) == [2, 1] and page.total == 2
    flagged = {m.number: m for m in page.items}
    assert (flagged[2].verdict, flagged[2].headline_change, flagged[2].level) == ("regression", 0.3, "low")
    assert flagged[1].verdict is None and flagged[1].top_reason.startswith("NCCL communicator")
    assert (flagged[1].author, flagged[1].url) == ("alice", "https://github.com/o/a/pull/1")


def test_results_of_an_older_head_of_the_pull_request_do_not_count(store):
    store.dashboard.record_merge(merge(1, "low", 5))
    add_result(store, "o/a", 1, "f" * 40, "regression")
    assert store.dashboard.flagged_merges(MergeQuery()).total == 0


def test_results_stored_before_the_merge_was_recorded_count_too(store):
    add_result(store, "o/a", 7, "h" + "7".rjust(39, "0"), "inconclusive")
    store.dashboard.record_merge(merge(7, "low", 3))
    [item] = store.dashboard.flagged_merges(MergeQuery()).items
    assert item.verdict == "inconclusive"


def test_an_ack_makes_an_untriaged_merge_acknowledged_and_triage_overrides_it(store):
    store.dashboard.record_merge(merge(1))
    store.dashboard.record_merge(merge(2))
    add_ack(store, "o/a", 1)
    assert numbers(store.dashboard.flagged_merges(MergeQuery(states=("acknowledged",)))) == [1]
    assert numbers(store.dashboard.flagged_merges(MergeQuery(states=("open",)))) == [2]
    event = TriageEvent("false_alarm", None, "noise on the runner", "carol", T0)
    assert store.dashboard.record_triage("o/a", 1, event)
    assert not store.dashboard.record_triage("o/a", 99, event)
    assert numbers(store.dashboard.flagged_merges(MergeQuery(states=("false_alarm",)))) == [1]
    assert numbers(store.dashboard.flagged_merges(MergeQuery(states=("acknowledged",)))) == []
    detail = store.dashboard.merge_detail("o/a", 1)
    assert [(t.state, t.note, t.user) for t in detail.triage] == [
        ("false_alarm", "noise on the runner", "carol")
    ]
    assert [(a.user, a.reason) for a in detail.acks] == [("bob", "expected")]
    assert detail.merge.state == "false_alarm" and detail.merge.acked


def test_filters_sorting_and_pages(store):
    for n in range(1, 31):
        store.dashboard.record_merge(
            merge(n, "high" if n % 3 == 0 else "medium", n, repo="o/a" if n <= 20 else "o/b")
        )
    assert store.dashboard.flagged_merges(MergeQuery(levels=("high",))).total == 10
    assert store.dashboard.flagged_merges(MergeQuery(repos=("o/b",))).total == 10
    assert store.dashboard.flagged_merges(MergeQuery(visible=frozenset({"o/b"}))).total == 10
    assert store.dashboard.flagged_merges(MergeQuery(visible=frozenset())).total == 0
    window = MergeQuery(since=T0 + timedelta(hours=5), until=T0 + timedelta(hours=8))
    assert sorted(numbers(store.dashboard.flagged_merges(window))) == [5, 6, 7]
    page2 = store.dashboard.flagged_merges(MergeQuery(per_page=7, page=2))
    assert (numbers(page2), page2.total, page2.pages) == ([23, 22, 21, 20, 19, 18, 17], 30, 5)
    oldest = store.dashboard.flagged_merges(MergeQuery(descending=False, per_page=3))
    assert numbers(oldest) == [1, 2, 3]
    riskiest = store.dashboard.flagged_merges(MergeQuery(sort="risk", per_page=2))
    assert numbers(riskiest) == [30, 29]
    assert store.dashboard.flagged_merges(MergeQuery(verdicts=("none",))).total == 30
    assert store.dashboard.flagged_merges(MergeQuery(verdicts=("regression",))).total == 0
    assert numbers(store.dashboard.flagged_merges(MergeQuery(page=99))) == []


def test_the_detail_holds_reasons_results_and_comparisons(store):
    store.dashboard.record_merge(merge(1))
    add_result(store, "o/a", 1, "h" + "1".rjust(39, "0"), "regression", 0.5)
    add_result(store, "o/a", None, "m" + "1".rjust(39, "0"), "unchanged", 0.0)
    detail = store.dashboard.merge_detail("o/a", 1)
    assert detail.reasons[0]["rule"] == "path.pynccl"
    assert sorted((r.verdict, r.on_default_branch) for r in detail.results) == [
        ("regression", False),
        ("unchanged", True),
    ]
    assert detail.results[0].comparison["metrics"] == []
    assert detail.merge.verdict == "regression" and store.dashboard.merge_detail("o/a", 2) is None


def test_series_are_listed_and_read_oldest_first_within_a_window(store):
    table = Base.metadata.tables[MetricPointRow.__tablename__]
    with store.engine.begin() as connection:
        connection.execute(
            insert(table),
            [
                {
                    "repo": "o/a",
                    "suite": "s",
                    "metric": "step_ms",
                    "unit": "ms",
                    "better": "lower",
                    "sha": f"{i:040x}",
                    "value": float(i),
                    "measured_at": T0 + timedelta(hours=i),
                }
                for i in range(10)
            ],
        )
    [key] = store.dashboard.series_keys(None)
    assert (key.repo, key.suite, key.metric, key.unit, key.better, key.points) == (
        "o/a",
        "s",
        "step_ms",
        "ms",
        "lower",
        10,
    )
    assert store.dashboard.series_keys(frozenset({"o/b"})) == []
    points = store.dashboard.series("o/a", "s", "step_ms", None, None, limit=3)
    assert [p.value for p in points] == [7.0, 8.0, 9.0]
    window = store.dashboard.series(
        "o/a", "s", "step_ms", T0 + timedelta(hours=2), T0 + timedelta(hours=5), limit=100
    )
    assert [p.value for p in window] == [2.0, 3.0, 4.0]


def test_repositories_are_private_unless_github_said_they_are_public(store):
    store.installations.replace(
        1,
        [
            Repository(1, "o/public", 1, False),
            Repository(2, "o/secret", 1, True),
            Repository(3, "o/untold", 1),
        ],
    )
    store.dashboard.record_merge(merge(1, repo="o/unknown"))
    assert store.dashboard.repository_privacy() == {
        "o/public": False,
        "o/secret": True,
        "o/untold": True,
        "o/unknown": True,
    }


@pytest.mark.parametrize("state", ["confirmed", "reverted"])
def test_outcomes_list_merges_settled_by_triage_or_benchmark(store, state):
    store.dashboard.record_merge(merge(1))
    store.dashboard.record_merge(merge(2))
    store.dashboard.record_merge(merge(3))
    add_result(store, "o/a", 2, "h" + "2".rjust(39, "0"), "unchanged", 0.0)
    store.dashboard.record_triage("o/a", 3, TriageEvent(state, None, "", "carol", T0))
    rows = {(r.repo, r.verdict, r.state, r.rules) for r in store.dashboard.outcomes(None)}
    assert rows == {("o/a", "unchanged", None, ("path.pynccl",)), ("o/a", None, state, ("path.pynccl",))}
