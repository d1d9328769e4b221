"""A merge's marker on a history chart stands on its merge commit's point (measured after the
merge's benchmark ran), not at the time it merged, which put the culprit's marker one point early."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.service.dashboard.history import History
from bot.service.ports.dashboard import Landed, Point, SeriesKey
from bot.web.dashboard import pages

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_each_merge_marker_and_the_merge_page_s_marker_stand_on_their_merge_commit_s_point(monkeypatch):
    monkeypatch.setattr(pages, "_merge_url", lambda repo, number: f"/merge/{number}")
    monkeypatch.setattr(pages, "commit_url", lambda repo, sha: f"/commit/{sha}")
    # Merges every 10 minutes, each measured 8 minutes after it merged: a marker at merge time
    # sits nearer the previous merge's point than its own.
    points = [Point(f"{n:040x}", 10.0 + n, T0 + timedelta(minutes=10 * n + 8)) for n in range(4)]
    merges = [
        Landed("o/r", 100 + n, f"#{n}", f"{n:040x}", T0 + timedelta(minutes=10 * n), 80, "high", True)
        for n in range(4)
    ]
    unmeasured = Landed("o/r", 200, "no point", "f" * 40, T0 + timedelta(minutes=35), 80, "high", True)
    history = History(SeriesKey("o/r", "s", "m", "ms", "lower", 4, None), points, [], [*merges, unmeasured])
    chart = pages._chart(history, "c")
    assert [m["t"] for m in chart["merges"][:4]] == chart["x"]
    assert chart["merges"][4]["t"] == int(unmeasured.merged_at.timestamp())  # no point: its time
    merge_page = pages._chart(history, "c", merges[2].merged_at, merges[2].merge_sha)
    assert merge_page["marker"] == chart["x"][2]
