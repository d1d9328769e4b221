"""The GitHub App manifest asks for what the handlers use, and subscribes to what they route."""

import json
from pathlib import Path

from bot.service.routes import ROUTER

MANIFEST = json.loads((Path(__file__).resolve().parents[2] / "app-manifest.json").read_text())
ALWAYS_DELIVERED = {"installation", "installation_repositories"}  # GitHub sends these to every App


def test_every_routed_event_is_subscribed():
    routed = {event for event, _ in ROUTER._handlers}
    assert routed - ALWAYS_DELIVERED <= set(MANIFEST["default_events"])


def test_the_permissions_cover_reviews_and_nothing_is_admin():
    permissions = MANIFEST["default_permissions"]
    assert permissions["checks"] == "write" and permissions["pull_requests"] == "write"
    assert permissions["contents"] == "read" and permissions["issues"] == "write"
    assert "admin" not in permissions.values() and "administration" not in permissions


def test_the_webhook_points_at_the_intake_route():
    assert MANIFEST["hook_attributes"]["url"].endswith("/webhook")


def test_the_dashboards_sign_in_comes_back_to_its_callback_route():
    assert [url.endswith("/signin/callback") for url in MANIFEST["callback_urls"]] == [True]
