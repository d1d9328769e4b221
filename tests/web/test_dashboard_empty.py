"""A dashboard with nothing in it says how to fill each page, instead of only that it is empty."""

from __future__ import annotations

import html

import pytest

from bot.bootstrap import build
from bot.settings import Settings
from bot.web.app import create_app


@pytest.fixture
def client(tmp_path):
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}", queue_url=f"sqlite:///{tmp_path / 'q.db'}"
    )
    runtime = build(settings)
    yield create_app(settings, runtime.services).test_client()
    runtime.close()


@pytest.mark.parametrize(
    "path, selector, advice",
    [
        ("/", 'id="empty-merges"', "install the App on the repositories to watch"),
        ("/history", 'id="empty-history"', "bench.dispatch.on_merge: medium"),
        ("/calibration", 'id="empty-calibration"', "Triage flagged merges on their pages"),
    ],
)
def test_each_empty_page_says_how_to_fill_it(client, path, selector, advice):
    answer = client.get(path)
    page = html.unescape(answer.get_data(as_text=True))
    assert answer.status_code == 200 and selector in page and advice in page


def test_filters_that_match_nothing_say_so_rather_than_how_to_start(client):
    page = client.get("/?level=high").get_data(as_text=True)
    assert "No flagged merges match these filters." in page and 'id="empty-merges"' not in page
