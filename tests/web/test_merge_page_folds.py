"""The merge page's charts fold: each in a <details> its caption opens and closes, the first of
each kind open, so that a merge with many metrics is a short page (seven charts stacked 4,557 px)."""

from __future__ import annotations

import re

from tests.web.test_dashboard import PUBLIC, merge_path
from tests.web.test_dashboard import dash as dash  # noqa: F401 (a fixture)


def test_every_chart_of_the_merge_page_folds_and_only_the_first_of_each_kind_is_open(dash):  # noqa: F811
    numbers = [
        m["number"] for m in dash.client.get(f"/api/v1/merges?repo={PUBLIC}&verdict=regression").json["items"]
    ]
    page = next(
        text
        for text in (dash.client.get(merge_path(PUBLIC, n)).get_data(as_text=True) for n in numbers)
        if text.count("data-chart=") > 1  # a merge with several history charts around it
    )
    folds = re.findall(
        r'<details class="chart-fold"( open)?>\s*<summary>.*?</summary>\s*<figure class="chart( rounds-chart)?">',
        page,
        re.S,
    )
    charts = page.count("data-chart=") + page.count("data-rounds-chart=")
    assert len(folds) == charts, (len(folds), charts)
    history = [opened for opened, rounds in folds if not rounds]
    assert history[0] == " open" and set(history[1:]) == {""}
    assert "<figcaption>" not in page  # the caption is the fold's summary
