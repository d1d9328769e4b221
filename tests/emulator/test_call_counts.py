"""Each delivery reads each fact from GitHub at most once and writes the sticky comment at most once,
counted as HTTP requests of the real adapter (PyGithub) to the GitHub emulator, through the whole
bot: signed delivery, intake, queue, pipeline. tests/service/test_call_counts.py counts the same
flows on the fake."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.core.judge.results_data import EAGLE3, HEAD_SHA, document
from tests.emulator import live
from tests.emulator.bench_support import NUMBER, finish, sticky
from tests.emulator.test_bench_end_to_end import bot as bot  # noqa: F401 (the fixture)
from tests.emulator.test_bench_end_to_end import eagle3_artifact, say
from tests.support import github_data

PULL = rf"/repos/{live.REPO}/pulls/{NUMBER}"
FACTS = {
    "pull": ("GET", PULL, None),  # the JSON description: any media type but the diff's
    "diff": ("GET", PULL, "diff"),
    "config": ("GET", rf"/repos/{live.REPO}/contents/\.github/perfbot\.yml", ""),
    "permission": ("GET", rf"/repos/{live.REPO}/collaborators/[^/]+/permission", ""),
    "artifacts": ("GET", rf"/repos/{live.REPO}/actions/runs/\d+/artifacts", ""),
}
COMMENT_WRITES = (
    ("POST", rf"/repos/{live.REPO}/issues/{NUMBER}/comments"),
    ("PATCH", rf"/repos/{live.REPO}/issues/comments/\d+"),
)


def counted(emulator, since: int) -> Counter:
    """The facts read and the sticky comment's writes among the requests since ``since``."""
    found: Counter = Counter()
    for request in emulator.requests[since:]:
        accept = request.headers.get("Accept", "")
        for fact, (method, path, media) in FACTS.items():
            wanted = "diff" not in accept if media is None else media in accept
            if request.method == method and re.fullmatch(path, request.path) and wanted:
                found[fact] += 1
        if any(request.method == m and re.fullmatch(p, request.path) for m, p in COMMENT_WRITES):
            found["comment writes"] += 1
    return found


def opened(bot, emulator) -> None:
    payload = github_data.pull_request(
        "opened", head_sha=HEAD_SHA, number=NUMBER, repo=live.REPO, installation_id=1
    )
    assert bot.deliver("pull_request", payload).status_code == 202
    bot.wait_idle()


def test_an_opened_pull_request_with_an_automatic_benchmark(bot, emulator):
    emulator.repos[live.REPO].permissions["octocat"] = "write"  # the example's author: trusted
    opened(bot, emulator)
    assert len(emulator.dispatches) == 1
    assert counted(emulator, 0) == Counter(pull=1, config=1, diff=1, permission=1, **{"comment writes": 1})


def test_a_bench_on_a_reviewed_pull_request(bot, emulator):
    opened(bot, emulator)
    before = len(emulator.requests)
    say(bot, emulator, "/bench sglang-eagle3")
    assert len(emulator.dispatches) == 1
    assert counted(emulator, before) == Counter(pull=1, config=1, permission=1, **{"comment writes": 1})


def test_a_completed_run_reads_no_diff_and_writes_the_comment_once(bot, emulator):
    opened(bot, emulator)
    say(bot, emulator, "/bench sglang-eagle3")
    [dispatched] = emulator.dispatches
    review = sticky(emulator).split("### ⏱️ Benchmarks")[0]
    before = len(emulator.requests)
    artifact = eagle3_artifact(dispatched["inputs"]["correlation-id"], document(EAGLE3))
    assert finish(bot, emulator, dispatched["run_id"], artifact=artifact).status_code == 202
    bot.wait_idle()
    assert counted(emulator, before) == Counter(config=1, artifacts=1, **{"comment writes": 1})
    assert sticky(emulator).startswith(review) and "Benchmark verdict" in sticky(emulator)


@pytest.mark.parametrize("merged_level", ["high"])
def test_a_merge_reads_no_diff_for_the_dashboard(bot, emulator, merged_level):
    opened(bot, emulator)
    emulator.repos[live.REPO].parents["c" * 40] = [HEAD_SHA]  # the merge commit of the example's merge
    before = len(emulator.requests)
    closed = github_data.pull_request(
        "closed", head_sha=HEAD_SHA, number=NUMBER, repo=live.REPO, installation_id=1
    )
    assert bot.deliver("pull_request", closed).status_code == 202
    bot.wait_idle()
    [merge] = bot.runtime.store.dashboard.merges()
    assert merge.level == merged_level and merge.reasons
    assert counted(emulator, before) == Counter(config=1), "the config decides the merge's benchmark"


def requests_since(emulator, since: int) -> Counter:
    """Every request about the repository since ``since``, by method and path (ids as N); the App's
    identity and installation token are asked once per process and thread, not per delivery."""
    return Counter(
        r.method + " " + re.sub(r"/\d+", "/N", r.path)
        for r in emulator.requests[since:]
        if r.path.startswith("/repos/")
    )


def test_a_bench_by_someone_without_write_access_costs_one_read(bot, emulator):
    """The permission is asked first, and nothing else is read before the refusal; the first refusal
    on a pull request is answered (a reaction and one reply), the next ones are not answered again."""
    opened(bot, emulator)
    before = len(emulator.requests)
    say(bot, emulator, "/bench", login="visitor")
    permission = f"GET /repos/{live.REPO}/collaborators/visitor/permission"
    assert requests_since(emulator, before) == Counter(
        {
            permission: 1,
            f"POST /repos/{live.REPO}/issues/comments/N/reactions": 1,
            f"POST /repos/{live.REPO}/issues/N/comments": 1,
        }
    )
    for body in ("/bench", "/bench approve", "/bench sglang-eagle3"):
        before = len(emulator.requests)
        say(bot, emulator, body, login="visitor")
        assert requests_since(emulator, before) == Counter({permission: 1}), body
