"""The dashboard's defences as Chromium applies them: the content security policy lets the pages
and charts work and blocks nothing of ours, no other site can frame the dashboard, and a sign-in
returns only to a page of this server, whatever `next` was."""

from __future__ import annotations

import random
import re
from urllib.parse import quote, urlsplit

from bot.web.dashboard.signin import safe_next
from tests.support import dashboard_data

PUBLIC = dashboard_data.REPOS[0]
PIECES = list("/\\\t\n\r \x00\x0b\x0c\x1f\x7f\xa0\u3000\uff0f@:.%?#ab") + [
    "evil.example",
    "%09",
    "%2F",
    "%5C",
    "https:",
    "javascript:",
    "merges",
    "=",
    "&",
    "~",
    "!",
    "'",
    "[",
    "]",
    ";",
    "x",
]


def csp_violations(page) -> list[str]:
    found: list[str] = []
    page.on(
        "console",
        lambda message: found.append(message.text) if "Content Security Policy" in message.text else None,
    )
    return found


def test_the_pages_and_their_charts_work_under_the_content_security_policy(server, page):
    violations = csp_violations(page)
    answer = page.goto(server + f"/history?series={PUBLIC}|verify-step|step_ms")
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    page.wait_for_function("window.perfbotCharts && window.perfbotCharts.length === 1")
    for path in ("/", "/calibration", f"/?repo={PUBLIC}&level=high"):
        page.goto(server + path)
        assert page.locator("main h1").count() == 1
    assert violations == []


def test_another_site_cannot_frame_the_dashboard(server, page):
    violations = csp_violations(page)
    page.set_content(f'<iframe id="f" src="{server}/" width="800" height="600"></iframe>')
    page.wait_for_timeout(1_000)
    framed = page.frames[1]
    assert "Flagged merges" not in framed.content()
    assert any("frame-ancestors" in v for v in violations), violations


def test_chromium_resolves_every_next_that_sign_in_accepts_to_this_server(server, page):
    rng = random.Random(17)
    candidates = ["/%09/evil.example/x", "/\t/evil.example/x", "/\\evil.example", "/merges/o/r/1#triage"]
    for _ in range(3_000):
        start = rng.choice(["/", "/", ""])  # most of them start as a path would
        candidates.append(start + "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8))))
    accepted = sorted({safe_next(c) for c in candidates})
    assert len(accepted) > 100, "the corpus reaches the accepting side"
    page.goto(server + "/calibration")
    hosts = page.evaluate("(paths) => paths.map(p => new URL(p, location.href).host)", accepted)
    assert set(hosts) == {urlsplit(server).netloc}


def test_a_sign_in_with_a_tab_in_next_comes_back_to_this_server(server, page):
    page.goto(server + "/signin?next=" + quote("/\t/evil.example/x", safe="/"))
    page.fill("#login", "reader")
    page.click("#authorize")
    page.wait_for_load_state()
    assert urlsplit(page.url).netloc == urlsplit(server).netloc
    assert re.search(r"@reader", page.inner_text("header.top"))
