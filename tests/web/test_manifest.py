"""The GitHub App manifest asks for what the handlers use, and subscribes to what they route."""

import json
from pathlib import Path

from bot.service.routes import ROUTER

MANIFEST = json.loads((Path(__file__).resolve().parents[2] / "app-manifest.json").read_text())
ALWAYS_DELIVERED = {"installation", "installation_repositories"}  # GitHub sends these to every App


def test_every_routed_event_is_subscribed_and_nothing_else():
    assert ROUTER.events() - ALWAYS_DELIVERED == set(MANIFEST["default_events"])


def test_the_permissions_are_the_least_the_bot_needs_and_nothing_is_admin():
    assert MANIFEST["default_permissions"] == {
        "metadata": "read",
        "contents": "read",  # the config on the default branch, commits of merges and schedules
        "pull_requests": "write",  # the PR, its diff, the sticky comment, replies, labels
        "issues": "write",  # reactions on comments: GitHub lists them under Issues only
        "checks": "write",  # perfbot / risk and perfbot / bench
        "actions": "write",  # dispatch the benchmark workflow, cancel it, download its artifact
    }


def test_the_webhook_points_at_the_intake_route():
    assert MANIFEST["hook_attributes"]["url"].endswith("/webhook")


def test_the_dashboards_sign_in_comes_back_to_its_callback_route():
    assert [url.endswith("/signin/callback") for url in MANIFEST["callback_urls"]] == [True]
