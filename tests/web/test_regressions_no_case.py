"""A history's "regression case" link to a commit no case names is not a dead end: the page says why
a change point may have no case, how to open one, and leads back to the history."""

from __future__ import annotations

from tests.web.test_regressions_page import BAD, PUBLIC
from tests.web.test_regressions_page import dash as dash  # noqa: F401 (a fixture)


def test_a_commit_without_a_case_says_why_and_leads_back(dash):  # noqa: F811
    page = dash.get(f"/regressions?repo={PUBLIC}&sha={'9' * 40}").get_data(as_text=True)
    assert 'id="no-regressions"' in page
    assert 'id="why-no-case"' in page, page[page.find("no-regressions") : page.find("no-regressions") + 1500]
    assert "/bench bisect GOOD BAD" in page and "established" in page
    assert f'href="/history?repo={PUBLIC}">Back to the history of {PUBLIC}</a>' in page


def test_a_commit_with_a_case_lists_it_and_nothing_more(dash):  # noqa: F811
    page = dash.get(f"/regressions?repo={PUBLIC}&sha={BAD}").get_data(as_text=True)
    assert 'id="regression-cases"' in page and 'id="why-no-case"' not in page
