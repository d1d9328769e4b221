"""The dashboard in Chromium against `perfbot serve` on PostgreSQL with thousands of merges:
filtering, pagination, a triage through GitHub's (emulated) sign-in, and charts drawn with their
data; a screenshot of each page."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import requests

from bot.core.vocabulary import LEVEL_ICONS, VERDICT_ICONS
from tests.support import dashboard_data

PUBLIC = dashboard_data.REPOS[0]


def api(server: str, path: str) -> dict:
    answer = requests.get(f"{server}{path}", timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_filtering_narrows_the_list_and_the_url_is_its_permalink(server, page, screenshot):
    page.goto(server + "/")
    total = int(page.inner_text("#total"))
    assert total == api(server, "/api/v1/merges")["total"] > 500  # of 3,000 public merges
    screenshot(page, "merges")
    page.select_option("select[name=level]", "high")
    page.select_option("select[name=verdict]", "regression")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"level=high"))
    query = parse_qs(urlsplit(page.url).query)
    assert query["level"] == ["high"] and query["verdict"] == ["regression"]
    narrowed = int(page.inner_text("#total"))
    assert 0 < narrowed < total
    assert narrowed == api(server, "/api/v1/merges?level=high&verdict=regression")["total"]
    rows = page.locator("table.merges tbody tr")
    assert rows.count() == min(50, narrowed)
    assert set(rows.locator("td[data-label=Risk] .badge").all_inner_texts()) <= {
        f"{LEVEL_ICONS['high']} high {n}" for n in range(101)
    }
    assert set(rows.locator("td[data-label=Benchmark]").all_inner_texts()) == {
        f"{VERDICT_ICONS['regression']} regression"
    }
    permalink = page.get_attribute("#permalink", "href")
    page.goto(server + permalink)
    assert int(page.inner_text("#total")) == narrowed


def test_pages_follow_each_other_without_overlap(server, page):
    page.goto(server + f"/?repo={PUBLIC}&per_page=20")
    first = page.locator("td[data-label=PR] a:not(.ext)").all_inner_texts()
    page.click("a[rel=next]")
    page.wait_for_url(re.compile(r"page=2"))
    second = page.locator("td[data-label=PR] a:not(.ext)").all_inner_texts()
    assert len(first) == len(second) == 20 and not set(first) & set(second)
    assert page.inner_text(".pager span[aria-current=page]") == "2"
    page.click("a[rel=last]")
    pages = api(server, f"/api/v1/merges?repo={PUBLIC}&per_page=20")["pages"]
    assert page.inner_text(".pager span[aria-current=page]") == str(pages)


def test_the_list_works_without_javascript_and_on_a_phone(browser, server, screenshot):
    context = browser.new_context(
        java_script_enabled=False,
        viewport={"width": 390, "height": 844},
        device_scale_factor=2,
        is_mobile=True,
    )
    try:
        phone = context.new_page()
        phone.goto(server + "/")
        phone.select_option("select[name=state]", "confirmed")
        phone.click("form.filters button[type=submit]")
        phone.wait_for_url(re.compile(r"state=confirmed"))
        states = phone.locator("td[data-label=Triage]").all_inner_texts()
        assert states and set(states) == {"confirmed"}
        screenshot(phone, "phone")
    finally:
        context.close()


def test_a_maintainer_signs_in_through_github_and_triages_a_merge(server, page, github, screenshot):
    merge = api(server, f"/api/v1/merges?repo={PUBLIC}&state=open&level=high&verdict=regression")["items"][0]
    detail = f"/merges/{PUBLIC}/{merge['number']}"
    page.goto(server + detail)
    assert page.locator("form.triage").count() == 0
    page.click("#sign-in")
    page.wait_for_url(re.compile(re.escape(github.base_url) + "/login/oauth/authorize"))
    page.fill("#login", "maintainer")
    page.click("#authorize")
    page.wait_for_url(server + detail)
    assert "@maintainer" in page.inner_text("header.top")
    page.check("input[name=state][value=confirmed]")
    page.fill("textarea[name=note]", "Reproduced on the nightly: <b>29 ms</b> per step, cc @octocat")
    page.click("form.triage button[type=submit]")
    page.wait_for_url(re.compile(re.escape(detail) + "#triage$"))
    assert page.inner_text("#state") == "confirmed"
    history = page.inner_text("#triage-history")
    assert "@maintainer marked it confirmed" in history and "<b>29 ms</b>" in history, (
        "the note shows as text"
    )
    assert api(server, f"/api/v1/merges/{PUBLIC}/{merge['number']}")["triage"]["state"] == "confirmed"
    page.wait_for_function("window.perfbotCharts && window.perfbotCharts.length > 0")
    screenshot(page, "merge", full_page=True)


def test_the_history_chart_draws_the_series_its_change_points_and_the_merges(
    server, page, dataset, screenshot
):
    series = f"{PUBLIC}|verify-step|step_ms"
    page.goto(server + f"/history?series={series}")
    page.wait_for_function("window.perfbotCharts && window.perfbotCharts.length === 1")
    drawn = page.evaluate(
        "(() => { const c = window.perfbotCharts[0]; return {x: c.plot.data[0], y: c.plot.data[1],"
        " changes: c.changes.map(p => p.i), merges: c.merges, width: c.plot.ctx.canvas.width,"
        " directions: c.changes.map(p => p.direction)}; })()"
    )
    expected = api(server, f"/api/v1/history?repo={PUBLIC}&suite=verify-step&metric=step_ms")
    assert drawn["y"] == [p["value"] for p in expected["points"]] and len(drawn["x"]) == 1_000
    assert drawn["changes"] == [c["index"] for c in expected["change_points"]]
    assert drawn["directions"] == ["regression", "improvement"]
    assert drawn["merges"] == len(expected["merges"]) > 0 and drawn["width"] > 500
    planted = [p.number for p in dataset.planted if (p.repo, p.suite) == (PUBLIC, "verify-step")]
    assert [c["suspects"][0]["number"] for c in expected["change_points"]] == planted
    assert page.locator("table.changes tbody tr").count() == 2
    screenshot(page, "history")


def test_the_calibration_page_shows_precision_per_level_and_rule(server, page, screenshot):
    page.goto(server + "/calibration")
    figures = api(server, "/api/v1/calibration")["all"]
    assert page.inner_text("#all-precision") == f"{round(figures['precision'] * 100)}%"
    assert page.inner_text("#all-missed") == str(figures["missed"])
    assert page.locator("details[open] tbody tr").count() == len(figures["rules"])
    screenshot(page, "calibration")


def test_a_comparison_draws_its_rounds_as_the_pr_comment_does(server, page, screenshot):
    merge = api(server, f"/api/v1/merges?repo={PUBLIC}&verdict=regression")["items"][0]
    stored = api(server, f"/api/v1/merges/{PUBLIC}/{merge['number']}")["results"][0]["comparison"]["charts"][
        0
    ]
    page.goto(server + f"/merges/{PUBLIC}/{merge['number']}")
    page.wait_for_function("window.perfbotCharts && window.perfbotCharts.some(c => c.kind === 'rounds')")
    drawn = page.evaluate(
        "(() => { const c = window.perfbotCharts.find(c => c.kind === 'rounds'); return {x: c.plot.data[0],"
        " base: c.plot.data[1], head: c.plot.data[2], width: c.plot.ctx.canvas.width,"
        " ticks: c.plot.axes[0].values(c.plot, c.plot.data[0])}; })()"
    )
    assert drawn["base"] == stored["base"] and drawn["head"] == stored["head"]
    assert drawn["x"] == list(range(1, len(stored["labels"]) + 1)) and drawn["width"] > 500
    assert drawn["ticks"] == stored["labels"], "the x-axis says which side ran first"
    page.locator("figure.rounds-chart").scroll_into_view_if_needed()
    screenshot(page, "comparison-rounds")
