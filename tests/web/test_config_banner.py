"""A repository whose `.github/perfbot.yml` perfbot could not read whole says so on the dashboard
(issue 36 item 2: only the pull request's comment said it): a banner on the repository's pages
names each invalid key with its "did you mean", and says that the automatic runs are held."""

from __future__ import annotations

import pytest

from bot.bootstrap import build
from bot.core.config import lenient
from bot.core.config.schema import parse
from bot.service.records import Merge, Repository
from bot.settings import Settings
from bot.web.app import create_app
from tests.web.helpers import SECRET
from tests.web.test_regressions_page import NOW

PUBLIC, PRIVATE, CLEAN = "octo/public", "octo/private", "octo/clean"
# auto: never and budget: 0 stay in force; two keys are misspelt
CONFIG = """\
bench:
  timout: 30
  dispatch:
    auto: never
    on_merg: never
    budget: 0
"""
SOURCE = ".github/perfbot.yml@main"


def problems() -> list[str]:
    """What perfbot's reader says of CONFIG, as it says it on the pull request."""
    read = lenient.salvage(parse(CONFIG, SOURCE))
    assert read.config.bench.dispatch.budget == 0 and len(read.problems) == 2
    return read.problems


@pytest.fixture
def dash(tmp_path, emulator):
    settings = Settings(
        webhook_secrets=(SECRET,),
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}",
        queue_url=f"sqlite:///{tmp_path / 'queue.db'}",
        github_token="ghp_banner",
        github_api_url=emulator.base_url,
        github_web_url=emulator.base_url,
        public_url="http://localhost",
        dashboard_anonymous="public",
    )
    runtime = build(settings)
    store = runtime.store
    store.installations.add(
        None,
        [
            Repository(1, PUBLIC, None, private=False),
            Repository(2, PRIVATE, None, True),
            Repository(3, CLEAN, None, False),
        ],
    )
    for number, repo in ((5, PUBLIC), (6, CLEAN)):
        store.dashboard.record_merge(
            Merge(
                repo=repo,
                number=number,
                title="t",
                merge_sha="a" * 40,
                head_sha="b" * 40,
                score=80,
                level="high",
                merged_at=NOW,
            )
        )
    store.config_problems.record(PUBLIC, SOURCE, problems())
    store.config_problems.record(PRIVATE, SOURCE, ["risk: unknown key"])
    yield runtime, create_app(settings, runtime.services, sessions=runtime.sessions).test_client()
    runtime.close()


def banner(page: str) -> str:
    start = page.find('<section class="config-problems"')
    return page[start : page.index("</section>", start)] if start >= 0 else ""


def test_the_repository_s_pages_name_each_invalid_key_its_guess_and_the_held_runs(dash):
    _, client = dash
    for path in (f"/merges/{PUBLIC}/5", f"/?repo={PUBLIC}", f"/history?repo={PUBLIC}", "/", "/calibration"):
        page = client.get(path)
        assert page.status_code == 200, path
        shown = banner(page.get_data(as_text=True))
        assert f'data-repo="{PUBLIC}"' in shown and SOURCE in shown, path
        assert "<code>bench.timout</code>: unknown key (did you mean &#39;timeout&#39;?)" in shown, path
        assert (
            "<code>bench.dispatch.on_merg</code>: unknown key (did you mean &#39;on_merge&#39;?)" in shown
        ), path
        assert "2 invalid keys" in shown and "held" in shown and "until the file is fixed" in shown, path


def test_a_clean_repository_s_pages_have_no_banner_and_a_private_one_is_not_shown_to_anyone(dash):
    _, client = dash
    assert banner(client.get(f"/merges/{CLEAN}/6").get_data(as_text=True)) == ""
    assert banner(client.get(f"/?repo={CLEAN}").get_data(as_text=True)) == ""
    everything = banner(client.get("/").get_data(as_text=True))
    assert PUBLIC in everything and PRIVATE not in everything
    assert PRIVATE not in banner(client.get(f"/?repo={PRIVATE}").get_data(as_text=True))


def test_the_banner_goes_once_the_file_reads_clean(dash):
    runtime, client = dash
    runtime.store.config_problems.record(PUBLIC, SOURCE, [])
    assert banner(client.get(f"/merges/{PUBLIC}/5").get_data(as_text=True)) == ""


def test_what_the_file_says_is_escaped(dash):
    runtime, client = dash
    runtime.store.config_problems.record(PUBLIC, SOURCE, ["<script>x</script>: unknown key"])
    shown = banner(client.get(f"/merges/{PUBLIC}/5").get_data(as_text=True))
    assert "<script>" not in shown and "&lt;script&gt;" in shown
