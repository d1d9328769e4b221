"""`compare` and `pull_of_commit` of the GitHub port, on the service tests' fake and on the real
adapter against the GitHub emulator (requests and answers checked against GitHub's REST
description): the same history gives the same answers on both."""

from __future__ import annotations

import json
import urllib.request

import pytest
from openapi_core.testing import MockRequest, MockResponse

from bot.adapters.github_client import PyGithubFactory, retry_policy
from bot.core.bench.policy import CommitRange
from bot.settings import Settings
from tests.emulator import live
from tests.service.fakes import FakeGitHub
from tests.support.github_emulator import GITHUB, openapi

REPO = live.REPO
# main: ROOT <- A <- B <- C <- M (M merges pull request 5, whose commits are H1 <- H2 from A);
# R1 (from A) was merged by pull request 6 into release/x; LONE shares no history with main.
ROOT, A, B, C, H1, H2, M, R1, LONE = (f"{digit}" * 40 for digit in "012345678")
FIRST_PARENTS = {A: ROOT, B: A, C: B, H1: A, H2: H1, M: C, R1: A}
PULL_5 = f"https://github.com/{REPO}/pull/5"


def fake_side() -> FakeGitHub:
    fake = FakeGitHub()
    fake.branches[REPO] = ("main", M)
    fake.parents.update({(REPO, sha): parent for sha, parent in FIRST_PARENTS.items()})
    for sha in (H1, H2, M):
        fake.commit_pulls[(REPO, sha)] = [(5, PULL_5, "main", True)]
    fake.commit_pulls[(REPO, R1)] = [(6, f"https://github.com/{REPO}/pull/6", "release/x", True)]
    return fake


def emulated_side(emulator, app_key):
    emulator.app_id, emulator.app_public_key = live.APP_ID, app_key[1]
    emulator.tokens.add("placeholder-so-that-auth-is-enforced")
    state = emulator.add_repo(REPO, "main")
    state.branches.update({"main": M, "release/x": R1})
    state.parents.update({sha: [parent] for sha, parent in FIRST_PARENTS.items()})
    state.parents[M] = [C, H2]
    state.parents[ROOT] = state.parents[LONE] = []
    emulator.add_pull(REPO, 5, H2, "", base_sha=A, state="closed", merged=True, merge_sha=M)
    emulator.add_pull(REPO, 6, R1, "", base_sha=A, base_ref="release/x", state="closed", merged=True)
    emulator.add_pull(REPO, 7, H1, "", base_sha=A)  # open, from the same commits: never the one named
    settings = Settings(app_id=live.APP_ID, private_key=app_key[0], github_api_url=emulator.base_url)
    factory = PyGithubFactory(settings, retry=retry_policy(total=2, backoff=0.05, secondary_wait=1))
    return factory.for_installation(1)


@pytest.fixture(params=["fake", "pygithub"])
def github(request):
    if request.param == "fake":
        return fake_side()
    return emulated_side(request.getfixturevalue("emulator"), request.getfixturevalue("app_key"))


def test_compare_tells_ahead_behind_and_identical_with_the_count(github):
    assert github.compare(REPO, A, C) == CommitRange("ahead", 2, 0)
    assert github.compare(REPO, C, A) == CommitRange("behind", 0, 2)
    assert github.compare(REPO, B, B) == CommitRange("identical", 0, 0)


def test_compare_of_an_unknown_or_unrelated_commit_is_none_not_an_error(github):
    assert github.compare(REPO, A, "e" * 40) is None
    assert github.compare(REPO, LONE, C) is None


@pytest.mark.parametrize("sha", [H1, H2, M])
def test_the_pull_request_that_merged_a_commit_into_the_default_branch(github, sha):
    assert github.pull_of_commit(REPO, sha) == (5, PULL_5)


@pytest.mark.parametrize("sha", [R1, C, "e" * 40])
def test_no_pull_request_for_a_commit_merged_elsewhere_pushed_directly_or_unknown(github, sha):
    assert github.pull_of_commit(REPO, sha) is None


def test_the_emulator_counts_a_merge_commits_inner_commits_and_says_diverged(emulator, app_key):
    github = emulated_side(emulator, app_key)
    assert github.compare(REPO, A, M) == CommitRange("ahead", 5, 0)  # B, C, H1, H2 and M
    assert github.compare(REPO, C, R1) == CommitRange("diverged", 1, 2)


@pytest.mark.parametrize(
    "path",
    [
        f"/repos/{REPO}/compare/{A}...{M}?per_page=1",
        f"/repos/{REPO}/commits/{H1}/pulls",
    ],
)
def test_the_emulator_answers_as_githubs_rest_description_says(emulator, app_key, path):
    emulated_side(emulator, app_key)
    emulator.tokens.add("reader")
    asked = urllib.request.Request(emulator.base_url + path, headers={"Authorization": "token reader"})
    with urllib.request.urlopen(asked) as answer:  # noqa: S310 (the local emulator)
        body, status, kind = answer.read(), answer.status, answer.headers.get_content_type()
    route, _, query = path.partition("?")
    request = MockRequest(GITHUB, "get", route, args=dict(p.split("=") for p in query.split("&") if p))
    openapi().validate_response(request, MockResponse(body, status_code=status, content_type=kind))
    assert json.loads(body)
