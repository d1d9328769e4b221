"""A merge's headline change reads as a change only where the verdict says the speed moved: an
inconclusive benchmark's "+34% tok_s" (a docs-only merge on a CPU) is shown as undecided."""

from __future__ import annotations

import re

from tests.web.test_dashboard import PUBLIC, merge_path
from tests.web.test_dashboard import dash as dash  # noqa: F401 (a fixture)


def change_cell(page: str, number: int) -> str:
    row = re.search(rf'<tr[^>]*>(?:(?!</tr>).)*?/{number}"(?:(?!</tr>).)*</tr>', page, re.S)
    assert row, number
    return re.search(r'<td data-label="Change" class="num">(.*?)</td>', row[0], re.S)[1]


def test_a_change_without_a_claim_is_shown_as_what_it_is_and_a_regression_as_measured(dash):  # noqa: F811
    checked = []
    for verdict, word in (
        ("inconclusive", "(undecided)"),
        ("unchanged", "(no change)"),
        ("regression", None),
    ):
        items = dash.client.get(f"/api/v1/merges?repo={PUBLIC}&verdict={verdict}").json["items"]
        merge = next((m for m in items if m["benchmark"]["headline_change"] is not None), None)
        if merge is None:  # the data set has none of this verdict among the flagged merges
            continue
        checked.append(verdict)
        page = dash.client.get(f"/?repo={PUBLIC}&verdict={verdict}&per_page=100").get_data(as_text=True)
        cell = change_cell(page, merge["number"])
        detail = dash.client.get(merge_path(PUBLIC, merge["number"])).get_data(as_text=True)
        if word:
            assert word in cell and 'class="muted undecided"' in cell, cell
            assert word in detail
        else:
            assert "undecided" not in cell and "(no change)" not in cell and "%" in cell, cell
    assert "regression" in checked and len(checked) >= 2, checked
