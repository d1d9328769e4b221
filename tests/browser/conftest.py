"""A real `perfbot serve` over PostgreSQL filled by the dashboard data generator, the GitHub
emulator for sign-in, and Debian's Chromium driven by Playwright (its own browser downloads are
not used). Screenshots go to the test's folder, and to docs/images with
PERFBOT_UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from bot.adapters.store.sql import SqlStore
from tests.support import dashboard_data, github_data
from tests.support.fixtures import *  # noqa: F403
from tests.support.github_emulator import GitHubEmulator
from tests.support.missing import importorskip, skip_or_fail
from tests.support.serving import environment, free_port, serving

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CLIENT_ID, CLIENT_SECRET = "Iv1.browsertests", "browser-test-client-secret"
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


@pytest.fixture(scope="module")
def scratch_database() -> str:
    """A database of its own (the other tests empty the shared one between tests)."""
    admin_url = os.environ.get("PERFBOT_TEST_POSTGRES_URL") or skip_or_fail(
        "PERFBOT_TEST_POSTGRES_URL is not set"
    )
    name = f"perfbot_b_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    yield admin.url.set(database=name).render_as_string(hide_password=False)
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="module")
def dataset(scratch_database) -> dashboard_data.Summary:
    store = SqlStore.connect(scratch_database)
    try:
        return dashboard_data.fill(store.engine, repos=3, merges_per_repo=1_000)
    finally:
        store.engine.dispose()


@pytest.fixture(scope="module")
def github():
    try:
        github_data.ensure()
    except github_data.MissingData as error:
        skip_or_fail(str(error))
    emulator = GitHubEmulator().start()
    emulator.add_oauth_app(CLIENT_ID, CLIENT_SECRET)
    for repo in dashboard_data.REPOS:
        emulator.add_repo(repo)
    emulator.repos[dashboard_data.REPOS[0]].permissions["maintainer"] = "write"
    yield emulator
    emulator.stop()


@pytest.fixture(scope="module")
def server(scratch_database, dataset, github, tmp_path_factory) -> str:
    port = free_port()  # sign-in needs the server's public URL, so the port is chosen first
    env = environment(
        PERFBOT_PUBLIC_URL=f"http://127.0.0.1:{port}",
        PERFBOT_WEBHOOK_SECRET="browser-tests",
        PERFBOT_DATABASE_URL=scratch_database,
        PERFBOT_GITHUB_TOKEN="ghp_browsertests",
        PERFBOT_GITHUB_API_URL=github.base_url,
        PERFBOT_GITHUB_WEB_URL=github.base_url,
        PERFBOT_OAUTH_CLIENT_ID=CLIENT_ID,
        PERFBOT_OAUTH_CLIENT_SECRET=CLIENT_SECRET,
        PERFBOT_SESSION_SECRET="b" * 48,
        PERFBOT_LOG_LEVEL="WARNING",
    )
    with serving(tmp_path_factory.mktemp("serve"), env, port=port) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    sync_api = importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"{CHROMIUM} is missing (apt-get install chromium)")
    playwright = sync_api.sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    yield browser
    browser.close()
    playwright.stop()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def screenshot(tmp_path):
    """Save a screenshot of ``page`` as NAME.png; into docs/images when asked to update them."""

    def take(page, name: str, full_page: bool = False) -> Path:
        path = tmp_path / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        assert path.stat().st_size > 10_000, "an empty screenshot"
        if os.environ.get("PERFBOT_UPDATE_SCREENSHOTS") == "1":
            DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, DOCS_IMAGES / f"dashboard-{name}.png")
        return path

    return take
