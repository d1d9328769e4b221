"""The PR comment's per-round chart as a reader sees it: the sticky comment's golden file rendered
as GitHub renders a comment (its Markdown to HTML, each ```mermaid block drawn by Mermaid) in
Chromium, then looked at: the chart is an xychart, not Mermaid's error picture, with a bar per base
round and a line through head's. The screenshot goes to docs/images/comment-chart.png with
PERFBOT_UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import html
import os
import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.browser.conftest import DOCS_IMAGES
from tests.support import mermaid_js
from tests.support.missing import skip_or_fail

GOLDEN = (
    Path(__file__).resolve().parents[1] / "core" / "review" / "test_sticky" / "sticky_comment_with_chart.md"
)
# Enough of GitHub's comment styles to look like one: its width, font, tables and code.
STYLE = """
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #1f2328;
       margin: 0; background: #f6f8fa; }
.comment { max-width: 860px; margin: 16px auto; padding: 16px 24px; background: #fff; border: 1px solid #d0d7de;
           border-radius: 6px; }
table { border-collapse: collapse; display: block; overflow: auto; } th, td { border: 1px solid #d0d7de;
        padding: 6px 13px; } tr:nth-child(2n) { background: #f6f8fa; }
code { background: rgba(175, 184, 193, .2); padding: .2em .4em; border-radius: 6px; font-size: 85%; }
pre { background: #f6f8fa; padding: 16px; overflow: auto; } pre.mermaid { background: none; text-align: center; }
blockquote { margin: 0; padding: 0 1em; color: #59636e; border-left: .25em solid #d0d7de; }
"""


def comment_html(markdown: str) -> str:
    """The comment as HTML, with raw HTML kept (<details>, <sub>) as GitHub keeps those tags, and
    each mermaid block left for Mermaid to draw."""
    renderer = MarkdownIt("commonmark", {"html": True}).enable("table")
    default_fence = renderer.renderer.rules["fence"]

    def fence(self, tokens, index, options, env):
        token = tokens[index]
        if token.info.strip() == "mermaid":
            return f'<pre class="mermaid">{html.escape(token.content)}</pre>\n'
        return default_fence(tokens, index, options, env)

    renderer.add_render_rule("fence", fence)
    body = renderer.render(markdown)
    return f"<!doctype html><html><head><style>{STYLE}</style></head><body><div class=comment>{body}</div></body></html>"


@pytest.fixture(scope="module")
def mermaid() -> Path:
    try:
        return mermaid_js.ensure()
    except mermaid_js.MissingMermaid as error:
        skip_or_fail(str(error))


def test_the_comment_chart_renders_as_an_xychart_with_every_round(page, mermaid, tmp_path):
    page.set_viewport_size({"width": 960, "height": 900})
    page.set_content(comment_html(GOLDEN.read_text()))
    page.add_script_tag(path=str(mermaid))
    page.evaluate("async () => { mermaid.initialize({ startOnLoad: false }); await mermaid.run(); }")
    chart = page.locator("pre.mermaid svg")
    assert chart.count() == 1 and chart.get_attribute("aria-roledescription") == "xychart"
    assert page.locator("pre.mermaid svg .bar-plot-0 rect").count() == 6  # one bar per base round
    assert page.locator("pre.mermaid svg .line-plot-1 path").count() == 1
    assert "regression +50.7%" in page.locator("pre.mermaid svg .chart-title").text_content()
    labels = page.locator("pre.mermaid svg .bottom-axis .label text").all_text_contents()
    assert labels[:3] == ["1 BH", "2 HB", "3 BH"]
    line = page.locator("pre.mermaid svg .line-plot-1 path").get_attribute("stroke")
    assert line == "#c62828", "head's line in the regression's colour"
    section = page.locator("h3", has_text="Benchmarks")
    section.scroll_into_view_if_needed()
    box = section.bounding_box()
    end = page.locator("p", has_text="Speculation break-even").bounding_box()
    assert box is not None and end is not None
    path = tmp_path / "comment-chart.png"
    page.screenshot(
        path=str(path),
        full_page=True,
        clip={"x": 0, "y": box["y"] - 16, "width": 960, "height": end["y"] + end["height"] - box["y"] + 32},
    )
    assert path.stat().st_size > 10_000, "an empty screenshot"
    if os.environ.get("PERFBOT_UPDATE_SCREENSHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS_IMAGES / "comment-chart.png")
