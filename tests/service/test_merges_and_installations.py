"""Merged PRs are recorded with their risk; installation events keep the repository list current."""

from __future__ import annotations

import pytest

from bot.service.ports import Review
from bot.service.routes import ROUTER
from bot.service.services import Services
from tests.service import diffs
from tests.service.fakes import FakeGitHub, FakeGitHubFactory, FakeQueue
from tests.service.test_review import NUMBER, REPO, SHA, payload


def merged(merged: bool = True) -> dict:
    data = payload("closed", state="closed")
    data["pull_request"].update(merged=merged, merged_at="2026-11-30T01:00:00Z", merge_commit_sha="m" * 40)
    return data


@pytest.fixture
def services(sqlite_store) -> Services:
    github = FakeGitHub()
    github.heads[(REPO, NUMBER)] = SHA
    github.diffs[(REPO, NUMBER)] = diffs.MEDIUM
    github.files[(REPO, ".github/perfbot.yml", "main")] = diffs.BASE_CONFIG
    return Services(store=sqlite_store, github=FakeGitHubFactory(github), queue=FakeQueue())


def test_a_merge_is_recorded_with_the_risk_of_its_published_review(services):
    services.store.save_review(Review(REPO, NUMBER, SHA, 88, "high"))
    ROUTER.dispatch("pull_request", merged(), services)
    [merge] = services.store.merges()
    assert (merge.repo, merge.number, merge.score, merge.level, merge.merge_sha) == (
        REPO,
        NUMBER,
        88,
        "high",
        "m" * 40,
    )
    assert merge.merged_at.isoformat() == "2026-11-30T01:00:00+00:00"


def test_a_merge_never_reviewed_is_scored_when_recorded(services):
    ROUTER.dispatch("pull_request", merged(), services)
    assert services.store.merges()[0].level == "medium"


def test_a_pr_closed_without_merging_is_not_recorded(services):
    ROUTER.dispatch("pull_request", merged(False), services)
    assert services.store.merges() == []


def installation(
    action: str, repos: list[tuple[int, str]], key: str = "repositories", installation_id: int = 5
) -> dict:
    return {
        "action": action,
        "installation": {"id": installation_id},
        key: [{"id": i, "full_name": n} for i, n in repos],
    }


def test_installing_then_changing_the_repository_selection_tracks_it(services):
    ROUTER.dispatch("installation", installation("created", [(1, "o/a"), (2, "o/b")]), services)
    ROUTER.dispatch(
        "installation_repositories",
        {
            **installation("added", [(3, "o/c")], "repositories_added"),
            "repositories_removed": [{"id": 1, "full_name": "o/a"}],
        },
        services,
    )
    assert [r.full_name for r in services.store.repositories()] == ["o/b", "o/c"]
    ROUTER.dispatch("installation", installation("deleted", []), services)
    assert services.store.repositories() == []


def test_a_removal_by_another_installation_leaves_the_repository_watched(services):
    ROUTER.dispatch("installation", installation("created", [(1, "o/a"), (2, "o/b")]), services)
    removal = installation("removed", [(1, "o/a")], "repositories_removed", installation_id=6)
    ROUTER.dispatch("installation_repositories", removal, services)
    assert [(r.full_name, r.installation_id) for r in services.store.repositories()] == [("o/a", 5), ("o/b", 5)]
