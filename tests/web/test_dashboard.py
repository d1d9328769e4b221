"""The dashboard through the app (Flask's test client) on SQLite and PostgreSQL, signing in through
the GitHub emulator's OAuth pages: what anonymous and signed-in viewers see, hostile input, and
who may triage."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from sqlalchemy import text

from bot.bootstrap import build
from bot.service.ports.dashboard import MergeQuery
from bot.settings import Settings
from bot.web.app import create_app
from tests.support import dashboard_data
from tests.support.github_emulator import GitHubEmulator
from tests.web.helpers import SECRET, deliver

CLIENT_ID, CLIENT_SECRET = "Iv1.dashboardtest", "client-secret-for-tests"
PUBLIC, PRIVATE = dashboard_data.REPOS[0], dashboard_data.PRIVATE


@dataclass
class Dashboard:
    client: object
    emulator: GitHubEmulator
    data: dashboard_data.Summary
    runtime: object


def make(database_url, tmp_path, emulator, anonymous: str = "public") -> Dashboard:
    settings = Settings(
        webhook_secrets=(SECRET,),
        database_url=database_url,
        queue_url=f"sqlite:///{tmp_path / 'queue.db'}",
        github_token="ghp_dashboardtest",
        github_api_url=emulator.base_url,
        github_web_url=emulator.base_url,
        oauth_client_id=CLIENT_ID,
        oauth_client_secret=CLIENT_SECRET,
        session_secret="s" * 40,
        public_url="http://localhost",
        dashboard_anonymous=anonymous,
    )
    runtime = build(settings)
    data = dashboard_data.fill(runtime.store.engine, repos=2, merges_per_repo=60)
    emulator.add_oauth_app(CLIENT_ID, CLIENT_SECRET)
    for repo in (PUBLIC, dashboard_data.REPOS[1], PRIVATE):
        emulator.add_repo(repo)
    emulator.repos[PUBLIC].permissions.update({"maintainer": "write", "reader": "read"})
    emulator.repos[PRIVATE].permissions["maintainer"] = "admin"
    return Dashboard(
        create_app(settings, runtime.services, sessions=runtime.sessions).test_client(),
        emulator,
        data,
        runtime,
    )


@pytest.fixture
def dash(database_url, tmp_path, emulator) -> Dashboard:
    made = make(database_url, tmp_path, emulator)
    yield made
    made.runtime.close()


def sign_in(dash: Dashboard, login: str, next_page: str = "/") -> None:
    """The browser's round trip: perfbot -> GitHub's authorize form -> perfbot's callback."""
    started = dash.client.get(f"/signin?next={next_page}")
    assert started.status_code == 302
    authorize = urlsplit(started.headers["Location"])
    assert authorize.path == "/login/oauth/authorize"
    query = {k: v[0] for k, v in parse_qs(authorize.query).items()}
    assert query["client_id"] == CLIENT_ID
    granted = requests.post(
        f"{dash.emulator.base_url}/login/oauth/authorize",
        allow_redirects=False,
        timeout=10,
        data={**query, "login": login},
    )
    back = urlsplit(granted.headers["Location"])
    answer = dash.client.get(f"{back.path}?{back.query}")
    assert (answer.status_code, answer.headers["Location"]) == (302, next_page)


def csrf(dash: Dashboard, path: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', dash.client.get(path).get_data(as_text=True))[1]


def merge_path(repo: str, number: int) -> str:
    return f"/merges/{repo}/{number}"


def test_the_list_answers_at_the_root_and_at_dashboard(dash):
    page = dash.client.get("/")
    assert page.status_code == 200 and "Flagged merges" in page.get_data(as_text=True)
    moved = dash.client.get("/dashboard?level=high")
    assert (moved.status_code, moved.headers["Location"]) == (308, "/?level=high")


def test_anonymous_viewers_see_public_repositories_only(dash):
    listing = dash.client.get("/api/v1/merges?per_page=200").json
    assert {m["repo"] for m in listing["items"]} == {PUBLIC, dashboard_data.REPOS[1]}
    number = next(m["number"] for m in _all(dash, PRIVATE))
    assert dash.client.get(merge_path(PRIVATE, number)).status_code == 404
    assert dash.client.get(f"/api/v1/merges/{PRIVATE}/{number}").status_code == 404
    assert PRIVATE not in dash.client.get("/").get_data(as_text=True)
    assert all(s["repo"] != PRIVATE for s in dash.client.get("/api/v1/series").json["series"])


def test_a_signed_in_user_also_sees_the_private_repositories_they_can_read(dash):
    sign_in(dash, "maintainer")
    repos = {m["repo"] for m in dash.client.get("/api/v1/merges?per_page=200&repo=" + PRIVATE).json["items"]}
    assert repos == {PRIVATE}
    assert dash.client.get("/api/v1/me").json["login"] == "maintainer"
    dash.client.post("/signout", data={"csrf_token": csrf(dash, "/")})
    assert dash.client.get("/api/v1/merges?repo=" + PRIVATE).json["total"] == 0


@pytest.mark.parametrize("mode,status,private_total", [("none", 401, None), ("all", 200, True)])
def test_anonymous_viewing_is_configurable(database_url, tmp_path, emulator, mode, status, private_total):
    made = make(database_url, tmp_path, emulator, anonymous=mode)
    try:
        assert made.client.get("/").status_code == status
        assert made.client.get("/api/v1/merges").status_code == status
        if private_total:
            assert made.client.get("/api/v1/merges?repo=" + PRIVATE).json["total"] > 0
    finally:
        made.runtime.close()


def test_filters_sorting_and_pages_have_permalinks(dash):
    api = dash.client.get(f"/api/v1/merges?repo={PUBLIC}&level=high&sort=risk&per_page=5").json
    assert api["items"] and all(m["repo"] == PUBLIC and m["risk"]["level"] == "high" for m in api["items"])
    scores = [m["risk"]["score"] for m in api["items"]]
    assert scores == sorted(scores, reverse=True)
    assert api["links"]["next"] == f"/api/v1/merges?repo={PUBLIC}&level=high&sort=risk&per_page=5&page=2"
    second = dash.client.get(api["links"]["next"]).json
    assert second["page"] == 2 and not {m["number"] for m in second["items"]} & {
        m["number"] for m in api["items"]
    }
    page = dash.client.get(f"/?repo={PUBLIC}&level=high&per_page=5").get_data(as_text=True)
    assert 'rel="next"' in page and "permalink to this view" in page


@pytest.mark.parametrize(
    "query,parameter",
    [
        ("page=abc", "page"),
        ("per_page=1e9", "per_page"),
        ("since=2026-13-01", "since"),
        ("until=yesterday", "until"),
        ("since=2026-03-02&until=2026-03-01", "until"),
        ("level=critical", "level"),
        ("verdict=<script>", "verdict"),
        ("state=closed", "state"),
        ("sort=merged_at;DROP TABLE merges", "sort"),
        ("repo=x' OR '1'='1", "repo"),
        ("repo=" + "a" * 300 + "/b", "repo"),
        ("order=sideways", "order"),
    ],
)
def test_bad_parameters_are_a_400_naming_the_parameter_on_the_page_and_the_api(dash, query, parameter):
    api = dash.client.get(f"/api/v1/merges?{query}")
    assert api.status_code == 400 and api.json["message"].startswith(f"{parameter}: expected")
    page = dash.client.get(f"/?{query}")
    assert page.status_code == 400 and f"{parameter}: expected" in html.unescape(page.get_data(as_text=True))
    assert "<script>" not in page.get_data(as_text=True)


def test_sizes_and_page_numbers_out_of_range_are_clamped(dash):
    assert dash.client.get("/api/v1/merges?per_page=100000").json["per_page"] == 200
    assert dash.client.get("/api/v1/merges?per_page=-5").json["per_page"] == 1
    far = dash.client.get("/api/v1/merges?page=99999999999999").json
    assert far["page"] == 100_000 and far["items"] == []
    history = dash.client.get(
        f"/api/v1/history?repo={PUBLIC}&suite=verify-step&metric=step_ms&points=999999999"
    )
    assert history.status_code == 200 and len(history.json["points"]) == 60


@pytest.mark.parametrize("number", [2**31, 2**63, 2**64 + 5, 10**30])
def test_pull_request_numbers_no_pull_request_can_have_are_a_404(dash, number):
    for path in (f"/api/v1/merges/{PUBLIC}/{number}", merge_path(PUBLIC, number)):
        assert dash.client.get(path).status_code == 404, path
    sign_in(dash, "maintainer")
    token = dash.client.get("/api/v1/me").json["csrf_token"]
    answer = dash.client.post(
        f"/api/v1/merges/{PUBLIC}/{number}/triage",
        json={"state": "confirmed"},
        headers={"X-CSRFToken": token},
    )
    assert answer.status_code == 404
    page = dash.client.post(
        f"{merge_path(PUBLIC, number)}/triage", data={"state": "confirmed", "csrf_token": token}
    )
    assert page.status_code == 404


def test_titles_with_html_and_mentions_are_escaped(dash):
    repo, number = dash.data.hostile
    text = dash.client.get(merge_path(repo, number)).get_data(as_text=True)
    assert "<script>alert" not in text and "&lt;script&gt;alert" in text and "<b>bold</b>" not in text
    listing = dash.client.get(f"/?repo={repo}&per_page=200&level=high&level=medium&level=low&level=none")
    assert "<script>alert" not in listing.get_data(as_text=True)


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(document.cookie)",
        " JavaScript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "//evil.example/pull/1",
        "https:evil",
    ],
)
def test_a_pull_request_url_is_linked_only_when_it_is_http_or_https(dash, url):
    repo, number = dash.data.hostile
    with dash.runtime.store.engine.begin() as connection:
        connection.execute(
            text("UPDATE merges SET url = :url WHERE repo = :repo AND number = :number"),
            {"url": url, "repo": repo, "number": number},
        )
    detail = dash.client.get(merge_path(repo, number)).get_data(as_text=True)
    listing = dash.client.get(f"/?repo={repo}&per_page=200&level=high&level=medium&level=low&level=none")
    for page in (detail, listing.get_data(as_text=True)):
        hrefs = [html.unescape(h) for h in re.findall(r'href="([^"]*)"', page)]
        assert not [
            h for h in hrefs if h.strip().lower().startswith(("javascript:", "data:", "//", "https:e"))
        ]
    assert f"#{number} on GitHub" not in detail
    assert dash.client.get(f"/api/v1/merges/{repo}/{number}").json["url"] == url, (
        "the API gives the data as it is"
    )


def test_the_history_finds_the_planted_changes_and_names_the_merges_that_caused_them(dash):
    for planted in dash.data.planted:
        if planted.repo != PUBLIC:
            continue
        found = dash.client.get(
            f"/api/v1/history?repo={PUBLIC}&suite={planted.suite}&metric={planted.metric}"
        ).json
        changes = {c["suspects"][0]["number"]: c for c in found["change_points"] if c["suspects"]}
        assert planted.number in changes, (planted, found["change_points"])
        assert changes[planted.number]["direction"] == planted.direction
        assert changes[planted.number]["change"] == pytest.approx(planted.change, abs=0.05)
    page = dash.client.get(f"/history?series={PUBLIC}|verify-step|step_ms").get_data(as_text=True)
    assert (
        'data-chart="history-chart-data"' in page
        and "/static/dashboard/vendor/uplot/uPlot.iife.min.js" in page
    )


def test_calibration_is_on_the_page_and_in_the_api(dash):
    api = dash.client.get("/api/v1/calibration").json
    assert api["all"]["merges"] > 0 and {lvl["key"] for lvl in api["all"]["levels"]} >= {
        "high",
        "medium",
        "low",
    }
    assert set(api["repositories"]) == {PUBLIC, dashboard_data.REPOS[1]}
    page = dash.client.get("/calibration").get_data(as_text=True)
    assert "of flagged merges (medium or high) regressed" in page and "Per rule" in page


def test_triage_needs_sign_in_csrf_and_write_permission(dash):
    number = _all(dash, PUBLIC)[0]["number"]
    target = merge_path(PUBLIC, number) + "/triage"
    api_target = f"/api/v1/merges/{PUBLIC}/{number}/triage"
    assert dash.client.post(target, data={"state": "confirmed"}).status_code == 400, "no CSRF token"
    assert dash.client.post(api_target, json={"state": "confirmed"}).status_code == 400
    assert "csrf_token" not in dash.client.get(merge_path(PUBLIC, number)).get_data(as_text=True), "no form"
    sign_in(dash, "reader")
    no_token = dash.client.post(target, data={"state": "confirmed"})
    assert no_token.status_code == 400 and "CSRF" in no_token.get_data(as_text=True)
    token = csrf(dash, merge_path(PUBLIC, number))
    refused = dash.client.post(target, data={"state": "confirmed", "csrf_token": token})
    assert refused.status_code == 403 and "needs write permission" in refused.get_data(as_text=True)
    api_refused = dash.client.post(api_target, json={"state": "confirmed"}, headers={"X-CSRFToken": token})
    assert api_refused.status_code == 403
    assert dash.client.get(f"/api/v1/merges/{PUBLIC}/{number}").json["triage_history"] == []


def test_a_maintainer_triages_and_the_note_is_escaped(dash):
    number = _all(dash, PUBLIC)[0]["number"]
    sign_in(dash, "maintainer", merge_path(PUBLIC, number))
    token = csrf(dash, merge_path(PUBLIC, number))
    target = merge_path(PUBLIC, number) + "/triage"
    bad = dash.client.post(target, data={"state": "fixed", "csrf_token": token})
    assert bad.status_code == 400 and "the number of the pull request" in bad.get_data(as_text=True)
    note = "<img src=x onerror=alert(1)> cc @octocat"
    done = dash.client.post(
        target, data={"state": "fixed", "fixed_by": "#4321", "note": note, "csrf_token": token}
    )
    assert done.status_code == 303
    page = dash.client.get(merge_path(PUBLIC, number)).get_data(as_text=True)
    assert (
        "fixed by #4321" in page and "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    )
    api = dash.client.get(f"/api/v1/merges/{PUBLIC}/{number}").json
    assert api["triage"] == {"state": "fixed", "fixed_by": 4321}
    assert api["triage_history"][-1]["user"] == "maintainer" and api["triage_history"][-1]["note"] == note
    by_api = dash.client.post(
        f"/api/v1/merges/{PUBLIC}/{number}/triage",
        headers={"X-CSRFToken": token},
        json={"state": "false_alarm", "note": "runner noise"},
    )
    assert by_api.status_code == 201 and by_api.json["state"] == "false_alarm"
    assert dash.client.get(f"/api/v1/merges?state=false_alarm&repo={PUBLIC}").json["total"] >= 1


@pytest.mark.parametrize(
    "body,message",
    [
        ({"state": "wontfix"}, "state must be one of"),
        ({"state": "fixed", "fixed_by": "12"}, "fixed_by"),
        ({"state": "confirmed", "note": "x" * 2001}, "longer than"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_bad_triage_through_the_api_is_a_400(dash, body, message):
    number = _all(dash, PUBLIC)[0]["number"]
    sign_in(dash, "maintainer")
    token = dash.client.get("/api/v1/me").json["csrf_token"]
    answer = dash.client.post(
        f"/api/v1/merges/{PUBLIC}/{number}/triage", json=body, headers={"X-CSRFToken": token}
    )
    assert answer.status_code == 400 and message in answer.json["message"]


@pytest.mark.parametrize(
    "next_page",
    [
        "//evil.example/steal",
        "/%09/evil.example/x",
        "/%5Cevil.example",
        "/%0A/evil.example",
        "https://evil.example/",
    ],
)
def test_a_forged_or_replayed_sign_in_is_refused_and_next_never_leaves_the_site(dash, next_page):
    assert dash.client.get("/signin/callback?code=abc&state=forged").status_code == 400
    started = dash.client.get(f"/signin?next={next_page}")
    query = {k: v[0] for k, v in parse_qs(urlsplit(started.headers["Location"]).query).items()}
    granted = requests.post(
        f"{dash.emulator.base_url}/login/oauth/authorize",
        allow_redirects=False,
        timeout=10,
        data={**query, "login": "maintainer"},
    )
    back = urlsplit(granted.headers["Location"])
    answer = dash.client.get(f"{back.path}?{back.query}")
    assert answer.headers["Location"] == "/"
    replay = dash.client.get(f"{back.path}?{back.query}")
    assert replay.status_code == 400, "the state is used once"


def test_the_webhook_is_not_behind_the_csrf_check(dash):
    assert deliver(dash.client, "ping", {"zen": "Design for failure."}).status_code == 200


def _all(dash: Dashboard, repo: str) -> list[dict]:
    page = dash.runtime.store.dashboard.flagged_merges(MergeQuery(repos=(repo,), per_page=200))
    return [m.to_dict() for m in page.items]


def test_the_merge_page_draws_each_comparisons_round_chart(dash):
    number = dash.client.get(f"/api/v1/merges?repo={PUBLIC}&verdict=regression").json["items"][0]["number"]
    stored = dash.client.get(f"/api/v1/merges/{PUBLIC}/{number}").json["results"][0]["comparison"]["charts"][
        0
    ]
    page = dash.client.get(merge_path(PUBLIC, number)).get_data(as_text=True)
    embedded = json.loads(
        re.search(r'<script type="application/json" id="rounds-0-0-data">(.*?)</script>', page, re.S)[1]
    )
    assert (embedded["labels"], embedded["base"], embedded["head"]) == (
        stored["labels"],
        stored["base"],
        stored["head"],
    )
    assert 'data-rounds-chart="rounds-0-0-data"' in page and "uPlot.iife.min.js" in page


@pytest.mark.parametrize(
    "charts",
    [
        None,
        "x",
        [{"labels": ["1 BH"], "base": [1.0], "head": []}],
        [{"labels": ["1 BH"], "base": ["1"], "head": [2.0]}],
        [{"labels": [], "base": [], "head": []}],
        [7],
    ],
)
def test_a_malformed_stored_chart_is_left_out(charts):
    from bot.web.dashboard.pages import _round_charts

    assert _round_charts({"charts": charts}, "rounds-0") == []
    good = {
        "metric": "m",
        "labels": ["1 BH", "2 HB"],
        "base": [1.0, None],
        "head": [2, 2.5],
        "verdict": "regression",
    }
    assert _round_charts({"charts": [good]}, "rounds-0")[0]["id"] == "rounds-0-0"
