"""What opens a regression case and what supersedes one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.core.watch import opening
from bot.core.watch.cases import Span
from bot.core.watch.opening import Found, OpenCase, SeriesPoint


def sha(n: int) -> str:
    return f"{n:040x}"


def chain(values, gaps=()):
    """Points of commits 1..n; each measured against its parent, except at ``gaps`` (where commits
    were not measured: the point's base is not the previous point)."""
    return [SeriesPoint(sha(i + 1), sha(i + 1000) if i in gaps else sha(i), v) for i, v in enumerate(values)]


def test_a_merge_run_regression_opens_a_case_of_that_merge():
    found = opening.from_merge_run("o/r", "verify-step", "verify_ms", sha(1), sha(2), "regression", 0.12)
    assert found == Found(Span("o/r", "verify-step", "verify_ms", sha(1), sha(2)), "merge", 0.12)
    for verdict in ("unchanged", "improvement", "inconclusive", "error"):
        assert opening.from_merge_run("o/r", "s", "m", sha(1), sha(2), verdict, 0.1) is None
    assert opening.from_merge_run("o/r", "s", None, sha(1), sha(2), "regression", 0.1) is None


def test_a_change_point_across_unmeasured_commits_opens_a_case():
    values = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 12.0, 12.1, 11.9, 12.0, 12.05, 11.95]
    found = opening.from_series("o/r", "s", "m", "lower", chain(values, gaps={7}))
    assert [f.span for f in found] == [Span("o/r", "s", "m", sha(7), sha(8))]
    assert found[0].source == "changepoint" and abs(found[0].change - 0.2) < 0.02


def test_a_change_point_one_commit_apart_is_the_merge_runs_and_an_improvement_opens_nothing():
    values = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 12.0, 12.1, 11.9, 12.0, 12.05, 11.95]
    assert opening.from_series("o/r", "s", "m", "lower", chain(values)) == []
    assert opening.from_series("o/r", "s", "m", "higher", chain(values, gaps={7})) == []


@given(st.lists(st.floats(min_value=1, max_value=100), max_size=40), st.sets(st.integers(0, 40)))
def test_any_series_gives_spans_of_its_own_consecutive_points(values, gaps):
    points = chain(values, gaps)
    for found in opening.from_series("o/r", "s", "m", "lower", points):
        index = [p.sha for p in points].index(found.span.bad)
        assert points[index - 1].sha == found.span.good and points[index].base_sha != found.span.good


def test_a_moved_change_supersedes_the_open_case_nearest_it_and_only_a_change_points():
    points = chain([1.0] * 20, gaps=set(range(20)))
    old = OpenCase("k1", Span("o/r", "s", "m", sha(7), sha(8)), "changepoint")
    merge = OpenCase("k2", Span("o/r", "s", "m", sha(3), sha(4)), "merge")
    far = OpenCase("k3", Span("o/r", "s", "m", sha(18), sha(19)), "changepoint")
    moved = Found(Span("o/r", "s", "m", sha(9), sha(10)), "changepoint", 0.1)
    assert opening.superseded([old, merge, far], [moved], points) == [(old, moved)]
    assert opening.superseded([old], [Found(old.span, "changepoint")], points) == []
    assert opening.superseded([old], [], points) == []
