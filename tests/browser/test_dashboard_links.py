"""The dashboard's links in Chromium: a click on a history chart's point opens the merge that made
that commit (or the commit on GitHub), a merge page links its merge commit and each risk reason's
file in the pull request, and lists the benchmark attempts that ended without a verdict, with why,
instead of saying nothing measured it."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import requests
from sqlalchemy import insert

from bot.adapters.store.sql import SqlStore
from bot.adapters.store.tables import BenchRequestRow, BenchResultRow
from tests.support import dashboard_data

PUBLIC = dashboard_data.REPOS[0]


def api(server: str, path: str) -> dict:
    answer = requests.get(f"{server}{path}", timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_click_on_a_chart_point_opens_the_merge_that_made_it(server, page, github):
    page.goto(server + f"/history?series={PUBLIC}|verify-step|step_ms")
    page.wait_for_function("window.perfbotCharts && window.perfbotCharts.length === 1")
    links = page.evaluate("JSON.parse(document.getElementById('history-chart-data').textContent).links")
    merges = [i for i, link in enumerate(links) if link.startswith(f"/merges/{PUBLIC}/")]
    commits = [link for link in links if not link.startswith("/merges/")]
    assert merges and all(link.startswith(f"{github.base_url}/{PUBLIC}/commit/") for link in commits)
    i = merges[len(merges) // 2]
    box = page.locator("#history-chart .u-over").bounding_box()
    left = page.evaluate(
        f"window.perfbotCharts[0].plot.valToPos(window.perfbotCharts[0].plot.data[0][{i}], 'x')"
    )
    top = page.evaluate(
        f"window.perfbotCharts[0].plot.valToPos(window.perfbotCharts[0].plot.data[1][{i}], 'y')"
    )
    expected = page.evaluate(f"window.perfbotCharts[0].linkAt({left})")
    assert expected.startswith(f"/merges/{PUBLIC}/")  # the point's merge, or a merge marker under it
    page.mouse.click(box["x"] + left, box["y"] + top)
    page.wait_for_url(server + expected)
    assert page.locator("h1").inner_text().startswith("#")


def test_change_points_link_their_commits(server, page, github):
    page.goto(server + f"/history?series={PUBLIC}|verify-step|step_ms")
    cells = "table.changes td[data-label=Commits]"
    hrefs = page.locator(f"{cells} a:not(.case-link)").evaluate_all("as => as.map(a => a.href)")
    assert len(hrefs) == 4 and all(h.startswith(f"{github.base_url}/{PUBLIC}/commit/") for h in hrefs)
    # a regression's row also links the case opened for it, on perfbot's own regressions page
    cases = page.locator(f"{cells} a.case-link").evaluate_all("as => as.map(a => a.href)")
    assert cases and all(h.startswith(f"{server}/regressions?repo=") for h in cases)


def test_a_merge_page_links_its_commit_and_each_reasons_file(server, page, github):
    merge = api(server, f"/api/v1/merges?repo={PUBLIC}&level=high")["items"][0]
    page.goto(server + f"/merges/{PUBLIC}/{merge['number']}")
    assert (
        page.get_attribute("#merge-commit", "href")
        == f"{github.base_url}/{PUBLIC}/commit/{merge['merge_sha']}"
    )
    reasons = page.locator("td[data-label=Reason] a").evaluate_all("as => as.map(a => a.href)")
    assert reasons and all(
        re.fullmatch(rf"{re.escape(merge['url'])}/files#diff-[0-9a-f]{{64}}", h) for h in reasons
    )


def test_failed_and_cancelled_attempts_are_listed_with_their_reasons(server, scratch_database, page):
    merge = api(server, f"/api/v1/merges?repo={PUBLIC}&verdict=none&level=high")["items"][0]
    number, head = merge["number"], merge["head_sha"]
    store = SqlStore.connect(scratch_database)
    at = datetime(2026, 1, 2, tzinfo=UTC)
    rows = [
        ("failed", "failure", "results.json: head round 2 failed: CUDA error: out of memory", 1),
        ("failed", None, "GitHub refused to start the benchmark workflow (404 Not Found)", 2),
        ("cancelled", "cancelled", None, 3),
    ]
    try:
        with store.engine.begin() as connection:
            connection.execute(
                insert(BenchRequestRow),
                [
                    {
                        "correlation_id": f"pb-links-{number}-{k}",
                        "repo": PUBLIC,
                        "number": number,
                        "base_sha": "b" * 40,
                        "head_sha": head,
                        "suites": json.dumps(["verify-step"]),
                        "trigger": "command",
                        "requested_by": "maintainer",
                        "status": status,
                        "conclusion": conclusion,
                        "error": error,
                        "run_url": f"https://github.com/{PUBLIC}/actions/runs/{k}" if conclusion else None,
                        "created_at": at + timedelta(minutes=k),
                        "updated_at": at + timedelta(minutes=k),
                    }
                    for status, conclusion, error, k in rows
                ],
            )
            assert (
                connection.execute(
                    BenchResultRow.__table__.select().where(
                        BenchResultRow.repo == PUBLIC, BenchResultRow.number == number
                    )
                ).first()
                is None
            )
    finally:
        store.engine.dispose()
    page.goto(server + f"/merges/{PUBLIC}/{number}")
    assert "No benchmark measured this merge" not in page.inner_text("main")
    assert "3 attempts ended without one" in page.inner_text("#no-comparison")
    table = page.inner_text("#attempts")
    assert "CUDA error: out of memory" in table and "404 Not Found" in table and "cancelled" in table
    assert page.locator("#attempts a").count() == 2
    attempts = api(server, f"/api/v1/merges/{PUBLIC}/{number}")["attempts"]
    assert [a["status"] for a in attempts] == ["failed", "failed", "cancelled"]
