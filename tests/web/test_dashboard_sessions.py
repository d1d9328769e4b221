"""Signed-in sessions live on the server (SQLite and PostgreSQL): signing out ends them for every
copy of the cookie, they end after `LIFETIME`, the private repositories a user may read are asked
of GitHub again after `RECHECK`, and the database holds no usable token. Every response carries
the security headers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from bot.adapters.store.tables import DashboardSessionRow
from bot.service.dashboard.sessions import LIFETIME, RECHECK
from bot.service.services import utc_now
from bot.web.headers import HEADERS
from tests.web.test_dashboard import PRIVATE, PUBLIC, csrf, make, merge_path, sign_in

COOKIE = "perfbot_session"


@pytest.fixture
def dash(database_url, tmp_path, emulator):
    made = make(database_url, tmp_path, emulator)
    yield made
    made.runtime.close()


def login(dash) -> str | None:
    return dash.client.get("/api/v1/me").json["login"]


def sees_private(dash) -> bool:
    return dash.client.get(f"/api/v1/merges?repo={PRIVATE}").json["total"] > 0


def cookie(dash) -> str:
    return dash.client.get_cookie(COOKIE).value


def later(dash, delta: timedelta) -> None:
    start = utc_now()
    dash.runtime.services.now = lambda: start + delta


def test_a_cookie_copied_before_sign_out_no_longer_signs_anyone_in(dash):
    sign_in(dash, "maintainer")
    stolen = cookie(dash)
    assert login(dash) == "maintainer" and sees_private(dash)
    assert dash.client.post("/signout", data={"csrf_token": csrf(dash, "/")}).status_code == 303
    dash.client.set_cookie(COOKIE, stolen)
    assert login(dash) is None and not sees_private(dash)
    listing = dash.client.get("/").get_data(as_text=True)
    assert "@maintainer" not in listing and PRIVATE not in listing


def test_signing_in_again_ends_the_session_before(dash):
    sign_in(dash, "maintainer")
    first = cookie(dash)
    sign_in(dash, "maintainer")
    assert cookie(dash) != first and login(dash) == "maintainer"
    dash.client.set_cookie(COOKIE, first)
    assert login(dash) is None


def test_a_session_ends_after_its_lifetime(dash):
    sign_in(dash, "maintainer")
    later(dash, LIFETIME - timedelta(minutes=1))
    assert login(dash) == "maintainer"
    later(dash, LIFETIME + timedelta(seconds=1))
    assert login(dash) is None
    with dash.runtime.store.engine.connect() as connection:
        assert connection.execute(select(DashboardSessionRow.key)).all() == [], "the ended session is gone"


def test_a_revoked_permission_hides_the_private_repository_after_the_recheck(dash):
    sign_in(dash, "maintainer")
    number = dash.client.get(f"/api/v1/merges?repo={PRIVATE}").json["items"][0]["number"]
    del dash.emulator.repos[PRIVATE].permissions["maintainer"]
    later(dash, RECHECK - timedelta(seconds=30))
    assert sees_private(dash), "the last answer is fresh enough"
    later(dash, RECHECK + timedelta(seconds=1))
    assert not sees_private(dash)
    assert dash.client.get(merge_path(PRIVATE, number)).status_code == 404
    assert login(dash) == "maintainer", "still signed in, for the public repositories"


def test_the_database_holds_no_token_of_a_cookie(dash):
    sign_in(dash, "maintainer")
    app = dash.client.application
    token = app.session_interface.get_signing_serializer(app).loads(cookie(dash))["session"]
    with dash.runtime.store.engine.connect() as connection:
        rows = connection.execute(select(DashboardSessionRow.key, DashboardSessionRow.login)).all()
    assert [row.login for row in rows] == ["maintainer"]
    assert token not in {row.key for row in rows} and len(rows[0].key) == 64


def test_a_forged_token_in_a_signed_cookie_is_anonymous(dash):
    app = dash.client.application
    for token in ("x" * 43, "", "y" * 5_000, 12):
        forged = app.session_interface.get_signing_serializer(app).dumps({"session": token})
        dash.client.set_cookie(COOKIE, forged)
        assert login(dash) is None


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/api/v1/merges",
        f"/merges/{PUBLIC}/999999",
        "/healthz",
        "/static/dashboard/charts.js",
        "/signin?next=/history",
    ],
)
def test_every_response_carries_the_security_headers(dash, path):
    answer = dash.client.get(path)
    for name, value in HEADERS.items():
        assert answer.headers.get(name) == value, (path, name)
    policy = answer.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy and "unsafe" not in policy
