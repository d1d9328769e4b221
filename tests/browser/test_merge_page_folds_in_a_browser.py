"""The dashboard's charts in Chromium, on `perfbot serve` with SQLite (no PostgreSQL needed): the merge
page's folded charts (only the first chart of each kind open; a folded one opens with its caption,
at the page's width: in a browser that gives it none while folded, it is fitted when opened) and
the history's merge markers, which stand on their merges' points."""

from __future__ import annotations

import pytest

from bot.adapters.store.sql import SqlStore
from tests.support import dashboard_data
from tests.support.serving import environment, free_port, serving

PUBLIC = dashboard_data.REPOS[0]


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("folds")
    url = f"sqlite:///{folder / 'perfbot.db'}"
    store = SqlStore.connect(url)
    try:
        dashboard_data.fill(store.engine, repos=1, merges_per_repo=60, private=False)
    finally:
        store.engine.dispose()
    env = environment(PERFBOT_WEBHOOK_SECRET="folds", PERFBOT_DATABASE_URL=url, PERFBOT_LOG_LEVEL="WARNING")
    with serving(folder, env, port=free_port()) as base:
        yield base


def test_folded_charts_open_at_the_page_s_width(sqlite_server, page):
    import requests

    items = requests.get(f"{sqlite_server}/api/v1/merges?repo={PUBLIC}&verdict=regression", timeout=10).json()
    numbers = [m["number"] for m in items["items"]]
    for number in numbers:
        page.goto(f"{sqlite_server}/merges/{PUBLIC}/{number}")
        if page.locator("details.chart-fold [data-chart]").count() > 1:
            break
    else:
        pytest.fail("no merge with several history charts in the data set")
    page.wait_for_function("window.perfbotCharts && window.perfbotCharts.length > 1")
    folds = page.locator("details.chart-fold:has([data-chart])")
    assert folds.nth(0).get_attribute("open") is not None
    assert folds.nth(1).get_attribute("open") is None
    folded = page.locator("#chart-1")
    assert not folded.is_visible()
    height = page.evaluate("document.documentElement.scrollHeight")
    folds.nth(1).locator("summary").click()
    assert folded.is_visible()
    width = page.evaluate("document.querySelector('#chart-0').clientWidth")
    assert abs(page.evaluate("window.perfbotCharts.find(c => c.id === 'chart-1').plot.width") - width) <= 2
    assert page.evaluate("document.documentElement.scrollHeight") > height + 200  # it was folded away


def test_history_markers_stand_on_their_merges_points_and_a_click_there_opens_that_merge(sqlite_server, page):
    page.goto(f"{sqlite_server}/history?series={PUBLIC}|verify-step|step_ms")
    page.wait_for_function("window.perfbotCharts && window.perfbotCharts.length === 1")
    data = page.evaluate("JSON.parse(document.getElementById('history-chart-data').textContent)")
    merges = data["merges"]
    assert merges and all(m["t"] in data["x"] for m in merges)
    # A click on a merge's point opens that merge, not a neighbour.
    m = merges[len(merges) // 2]
    i = data["x"].index(m["t"])
    left = page.evaluate(f"window.perfbotCharts[0].plot.valToPos({m['t']}, 'x')")
    assert page.evaluate(f"window.perfbotCharts[0].linkAt({left})") == m["url"]
    assert data["links"][i] == m["url"]  # the point itself leads there too
