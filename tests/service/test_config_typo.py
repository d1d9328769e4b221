"""The issue's scenario end to end through the router: a maintainer switched GPU spending off in
`.github/perfbot.yml` and misspelt one key. Before, the whole file was discarded and the defaults
dispatched an automatic benchmark and a merge run; now its valid keys hold, nothing runs on its own
until it is fixed, and the pull request says so with a guess at the key meant."""

from __future__ import annotations

from tests.service import diffs
from tests.service.test_bench import HEAD_SHA, NUMBER, REPO, comment, pull_request, send
from tests.service.test_bench import github as github  # noqa: F401 (a fixture)
from tests.service.test_bench import services as services  # noqa: F401 (a fixture)

SWITCHED_OFF_WITH_A_TYPO = (
    diffs.BASE_CONFIG
    + """bench:
  timout: 600
  suites:
    sglang-eagle3: {kind: sglang-eagle3, model_path: m, draft_model_path: d}
  dispatch:
    auto: never
    on_merge: never
    budget: 0
"""
)


def test_a_misspelt_key_neither_dispatches_nor_runs_the_merge_and_the_pull_request_says_why(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = SWITCHED_OFF_WITH_A_TYPO
    github.permissions[(REPO, "author")] = "write"  # a trusted author's high-risk push: `auto` would run it
    send(services, "pull_request", pull_request("opened"))
    assert github.dispatches == []
    review = github.comments[(REPO, NUMBER)][0].replace("\\", "")  # Markdown's escapes
    assert "Config problem" in review and "bench.timout: unknown key (did you mean 'timeout'?)" in review
    assert "off until it is fixed" in review
    # The repository's own rules still score the pull request (the defaults would use others).
    assert services.store.reviews.get(REPO, NUMBER).level == "high"

    merge_sha = "d" * 40
    github.parents[(REPO, merge_sha)] = "0" * 40
    send(
        services,
        "pull_request",
        pull_request(
            "closed",
            merged=True,
            merge_commit_sha=merge_sha,
            state="closed",
            merged_at="2026-12-01T10:00:00Z",
        ),
    )
    assert github.dispatches == []
    assert services.store.benchmarks.for_pull(REPO, None) == []


def test_a_person_s_bench_still_runs_under_the_valid_part(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = SWITCHED_OFF_WITH_A_TYPO.replace(
        "    budget: 0\n", "    budget: 0\n    cooldown: {user: 0, pr: 0}\n"
    )
    send(services, "issue_comment", comment("/bench"))
    [dispatched] = github.dispatches
    assert dispatched["inputs"]["head-sha"] == HEAD_SHA
