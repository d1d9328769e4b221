"""The dashboard marks a risk level and a verdict with the icons of the sticky comment and the check
runs, which tell the two apart: a high risk and a regression were both red (issue 36)."""

from __future__ import annotations

import re

from bot.core.vocabulary import LEVEL_ICONS, VERDICT_ICONS
from tests.web.test_dashboard import PUBLIC
from tests.web.test_dashboard import dash as dash  # noqa: F401 (a fixture)


def cells(page: str, label: str) -> list[str]:
    return re.findall(rf'<td data-label="{label}"[^>]*>(.*?)</td>', page, re.S)


def test_a_high_risk_and_a_regression_carry_their_own_icons_on_the_list(dash):  # noqa: F811
    page = dash.client.get(f"/?repo={PUBLIC}&level=high&verdict=regression").get_data(as_text=True)
    risks, verdicts = cells(page, "Risk"), cells(page, "Benchmark")
    assert risks and len(risks) == len(verdicts)
    high, regression = LEVEL_ICONS["high"], VERDICT_ICONS["regression"]
    assert high != regression
    for risk, verdict in zip(risks, verdicts, strict=True):
        assert f'aria-hidden="true">{high}</span> high' in risk and regression not in risk, risk
        assert f'aria-hidden="true">{regression}</span> regression' in verdict and high not in verdict, (
            verdict
        )


def test_the_merge_page_and_the_calibration_use_the_same_icons(dash):  # noqa: F811
    number = dash.client.get(f"/api/v1/merges?repo={PUBLIC}&level=high&verdict=regression").json["items"][0][
        "number"
    ]
    merge = dash.client.get(f"/merges/{PUBLIC}/{number}").get_data(as_text=True)
    assert (
        f"{LEVEL_ICONS['high']}</span> high" in merge
        and f"{VERDICT_ICONS['regression']}</span> regression" in merge
    )
    calibration = dash.client.get("/calibration").get_data(as_text=True)
    assert all(f"{LEVEL_ICONS[level]}</span> {level}" in calibration for level in ("high", "medium", "low"))
