"""The sandbox's thread page draws the bot's ```mermaid chart, as GitHub does (it showed the
chart's source), with the pinned Mermaid the stand-in serves; without Mermaid it says why."""

from __future__ import annotations

from bot.sandbox.github import GitHubEmulator
from bot.sandbox.pages import Hooks, Site
from tests.browser.test_comment_chart import GOLDEN
from tests.browser.test_comment_chart import mermaid as mermaid  # noqa: F401 (a fixture)

REPO = "sandbox/mini-engine"


def standin_with_the_chart(script) -> GitHubEmulator:
    standin = GitHubEmulator()
    standin.web_links = standin.stamped = True
    standin.add_repo(REPO, "master")
    standin.add_pull(
        REPO, 11, "a" * 40, "", base_sha="b" * 40, base_ref="master", author="dev", title="t", head_ref="h"
    )
    standin.add_comment(REPO, 11, GOLDEN.read_text(), "perfbot[bot]", user_type="Bot")
    standin.start()
    hooks = Hooks(lambda *a: None, lambda *a: None, "s", 1)  # type: ignore[arg-type, return-value]
    standin.site = Site(standin, hooks, "Codertocat", "http://127.0.0.1:1/", script)
    return standin


def test_the_thread_page_draws_the_bots_chart(page, mermaid):  # noqa: F811
    standin = standin_with_the_chart(mermaid)
    try:
        page.goto(f"{standin.base_url}/{REPO}/pull/11")
        page.wait_for_selector("pre.mermaid svg", timeout=15_000)
        chart = page.locator("pre.mermaid svg")
        assert chart.count() == 1 and chart.get_attribute("aria-roledescription") == "xychart"
        assert page.locator("#mermaid-missing").count() == 0
    finally:
        standin.stop()


def test_without_mermaid_the_page_shows_the_source_and_says_why(page):
    standin = standin_with_the_chart("npm is not installed")
    try:
        page.goto(f"{standin.base_url}/{REPO}/pull/11")
        assert "npm is not installed" in page.inner_text("#mermaid-missing")
        assert "xychart-beta" in page.locator("pre.mermaid").inner_text()
        assert page.locator("pre.mermaid svg").count() == 0
    finally:
        standin.stop()
