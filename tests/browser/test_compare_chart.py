"""The comparison's per-round chart as a reader sees it, drawn from zero with a failed pair left
out: the golden file of a regression whose third head round failed
(tests/core/render/test_compare/compare_failed_pair.md), its Markdown turned into HTML as GitHub
does and its ```mermaid block drawn by Mermaid in Chromium. The screenshot goes to
docs/images/compare-chart.png with PERFBOT_UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from tests.browser.conftest import DOCS_IMAGES
from tests.browser.test_comment_chart import comment_html, mermaid  # noqa: F401 (a fixture)

GOLDEN = Path(__file__).resolve().parents[1] / "core" / "render" / "test_compare" / "compare_failed_pair.md"


def test_the_chart_starts_at_zero_and_leaves_the_failed_pair_out(page, mermaid, tmp_path):  # noqa: F811
    markdown = GOLDEN.read_text()
    pairs = re.search(r'x-axis "round pair" \[([^\]]*)\]', markdown).group(1).count('"') // 2
    page.set_viewport_size({"width": 960, "height": 900})
    page.set_content(comment_html(markdown))
    page.add_script_tag(path=str(mermaid))
    page.evaluate("async () => { mermaid.initialize({ startOnLoad: false }); await mermaid.run(); }")
    chart = page.locator("pre.mermaid svg")
    assert chart.count() == 1 and chart.get_attribute("aria-roledescription") == "xychart"
    assert pairs == 9 and page.locator("pre.mermaid svg .bar-plot-0 rect").count() == pairs
    labels = page.locator("pre.mermaid svg .bottom-axis .label text").all_text_contents()
    assert labels[:3] == ["1 BH", "2 HB", "4 HB"]  # pair 3 (its head round failed) is not drawn
    ticks = page.locator("pre.mermaid svg .left-axis .label text").all_text_contents()
    assert float(ticks[0]) == 0 or float(ticks[-1]) == 0, ticks  # the axis starts at 0
    assert "Not drawn: pair 3 BH" in page.locator("sub", has_text="on an axis from 0").text_content()
    box = chart.bounding_box()
    caption = page.locator("sub", has_text="on an axis from 0").bounding_box()
    assert box is not None and caption is not None
    path = tmp_path / "compare-chart.png"
    page.screenshot(
        path=str(path),
        full_page=True,
        clip={
            "x": 0,
            "y": box["y"] - 16,
            "width": 960,
            "height": caption["y"] + caption["height"] - box["y"] + 32,
        },
    )
    assert path.stat().st_size > 10_000, "an empty screenshot"
    if os.environ.get("PERFBOT_UPDATE_SCREENSHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS_IMAGES / "compare-chart.png")
