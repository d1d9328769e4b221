"""Merged PRs are recorded with their risk; installation events keep the repository list current."""

from __future__ import annotations

import pytest

from bot.service.records import Review
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
    services.store.reviews.save(Review(repo=REPO, number=NUMBER, head_sha=SHA, score=88, level="high"))
    ROUTER.dispatch("pull_request", merged(), services)
    [merge] = services.store.dashboard.merges()
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
    assert services.store.dashboard.merges()[0].level == "medium"


def test_a_merge_keeps_its_author_link_and_the_reasons_of_its_diff_heaviest_first(services):
    data = merged()
    data["pull_request"]["user"] = {"login": "alice"}
    ROUTER.dispatch("pull_request", data, services)
    [merge] = services.store.dashboard.merges()
    assert (merge.author, merge.url) == ("alice", f"https://github.com/{REPO}/pull/{NUMBER}")
    assert merge.reasons and [r.weight for r in merge.reasons] == sorted(
        (r.weight for r in merge.reasons), reverse=True
    )
    assert merge.reasons[0].rule in merge.reasons[0].text


def test_a_merge_whose_pull_request_is_gone_keeps_the_published_risk_without_reasons(services):
    services.store.reviews.save(Review(repo=REPO, number=NUMBER, head_sha=SHA, score=88, level="high"))
    services.github.github.heads.clear()
    services.github.github.diffs.clear()
    ROUTER.dispatch("pull_request", merged(), services)
    [merge] = services.store.dashboard.merges()
    assert (merge.score, merge.level, merge.reasons) == (88, "high", ())


def test_a_pr_closed_without_merging_is_not_recorded(services):
    ROUTER.dispatch("pull_request", merged(False), services)
    assert services.store.dashboard.merges() == []


def installation(
    action: str, repos: list[tuple[int, str]], key: str = "repositories", installation_id: int = 5
) -> dict:
    return {
        "action": action,
        "installation": {"id": installation_id},
        key: [{"id": i, "full_name": n, "private": n.endswith("secret")} for i, n in repos],
    }


def test_installations_record_which_repositories_are_private(services):
    ROUTER.dispatch("installation", installation("created", [(1, "o/a"), (2, "o/secret")]), services)
    assert [(r.full_name, r.private) for r in services.store.installations.repositories()] == [
        ("o/a", False),
        ("o/secret", True),
    ]


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
    assert [r.full_name for r in services.store.installations.repositories()] == ["o/b", "o/c"]
    ROUTER.dispatch("installation", installation("deleted", []), services)
    assert services.store.installations.repositories() == []


def test_a_removal_by_another_installation_leaves_the_repository_watched(services):
    ROUTER.dispatch("installation", installation("created", [(1, "o/a"), (2, "o/b")]), services)
    removal = installation("removed", [(1, "o/a")], "repositories_removed", installation_id=6)
    ROUTER.dispatch("installation_repositories", removal, services)
    assert [(r.full_name, r.installation_id) for r in services.store.installations.repositories()] == [
        ("o/a", 5),
        ("o/b", 5),
    ]


# ------------------------------------------------ only merges into the default branch are its history


def github_merge(base_ref: str, default_branch: str = "main") -> tuple[dict, dict]:
    """GitHub's own `pull_request` example (opened, then closed and merged, checked against its
    schema) of the service tests' repository, targeting ``base_ref``."""
    from bot.sandbox import payloads
    from tests.core.judge.results_data import HEAD_SHA
    from tests.service import test_bench
    from tests.support import github_data

    made = []
    for action in ("opened", "closed"):
        payload = payloads.pull_request(
            action, head_sha=HEAD_SHA, number=test_bench.NUMBER, repo=test_bench.REPO, installation_id=42
        )
        payload["repository"]["default_branch"] = default_branch
        payload["pull_request"]["base"]["ref"] = base_ref
        payload["pull_request"]["base"]["repo"]["default_branch"] = default_branch
        made.append(github_data.valid("pull_request", payload))
    return made[0], made[1]


@pytest.fixture
def bench_services(sqlite_store) -> Services:
    from tests.core.judge.results_data import BASE_SHA
    from tests.service import test_bench

    github = test_bench.make_github()
    github.parents[(test_bench.REPO, "c" * 40)] = BASE_SHA  # the example's merge commit
    github.permissions[(test_bench.REPO, "Codertocat")] = "read"
    return Services(store=sqlite_store, github=FakeGitHubFactory(github), queue=FakeQueue())


def test_a_merge_into_the_default_branch_is_recorded_and_benchmarked(bench_services):
    opened, closed = github_merge("main")
    ROUTER.dispatch("pull_request", opened, bench_services)
    ROUTER.dispatch("pull_request", closed, bench_services)
    [merge] = bench_services.store.dashboard.merges()
    assert merge.merge_sha == "c" * 40
    [run] = [d for d in bench_services.github.github.dispatches if d["inputs"]["head-sha"] == "c" * 40]
    assert run["inputs"]["pr"] == ""


@pytest.mark.parametrize(("base_ref", "default_branch"), [("release/x", "main"), ("main", "trunk")])
def test_a_merge_into_another_branch_is_neither_recorded_nor_benchmarked(
    bench_services, base_ref, default_branch
):
    opened, closed = github_merge(base_ref, default_branch)
    ROUTER.dispatch("pull_request", opened, bench_services)
    ROUTER.dispatch("pull_request", closed, bench_services)
    assert bench_services.store.dashboard.merges() == []
    assert [d for d in bench_services.github.github.dispatches if d["inputs"]["head-sha"] == "c" * 40] == []
