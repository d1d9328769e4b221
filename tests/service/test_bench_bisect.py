"""`/bench bisect GOOD BAD` through the real router on the real store with the fake GitHub: the
cooldowns of `/bench` bound it, and the range is checked through GitHub's compare before any case is
opened or charged (a reversed range, one commit written two ways, unrelated commits, a range over
the cap, each a clear reply)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from bot.core.bench import policy
from bot.service.records import Merge
from bot.service.routes import ROUTER
from bot.service.services import Services
from tests.service.fakes import FakeGitHub, FakeGitHubFactory, FakeQueue
from tests.service.test_bench import CONFIG, NOW, REPO, comment, drain, make_github, replies, send

COOLING = CONFIG.replace("cooldown: {user: 0, pr: 0}", "cooldown: {user: 14400, pr: 0}")
PR_COOLING = CONFIG.replace("cooldown: {user: 0, pr: 0}", "cooldown: {user: 0, pr: 3600}")


def sha(n: int) -> str:
    return f"{n:02x}" * 20


@pytest.fixture
def github() -> FakeGitHub:
    return make_github()


@pytest.fixture
def services(github, sqlite_store) -> Services:
    services = Services(store=sqlite_store, github=FakeGitHubFactory(github), queue=FakeQueue())
    services.now = lambda: NOW
    return services


def history(services, github, count: int) -> list[str]:
    """A default branch of ``count`` commits after sha(0), each merged by a pull request perfbot
    recorded; the shas, oldest first (sha(0) included)."""
    shas = [sha(n) for n in range(count + 1)]
    for parent, child in zip(shas, shas[1:], strict=False):
        github.parents[(REPO, child)] = parent
    for number, merged in enumerate(shas, start=100):
        services.store.dashboard.record_merge(
            Merge(
                repo=REPO,
                number=number,
                title=f"pr {number}",
                merge_sha=merged,
                head_sha=f"{number:040x}",
                score=10,
                level="low",
                merged_at=NOW,
                url=f"https://github.com/{REPO}/pull/{number}",
            )
        )
    return shas


def bisects(github) -> list[dict]:
    return [d for d in github.dispatches if d["inputs"].get("mode") == "bisect"]


def later(services, minutes: int) -> None:
    services.now = lambda: NOW + timedelta(minutes=minutes)


def test_a_second_bisect_by_the_same_person_waits_for_the_cooldown(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = COOLING
    shas = history(services, github, 6)
    send(services, "issue_comment", comment(f"/bench bisect {shas[0][:8]} {shas[3][:8]} sglang-eagle3"))
    assert len(bisects(github)) == 1
    later(services, 1)
    send(
        services,
        "issue_comment",
        comment(f"/bench bisect {shas[3][:8]} {shas[6][:8]} sglang-eagle3", comment_id=502, minute=2),
    )
    assert len(bisects(github)) == 1 and len(services.store.watch.cases(None)) == 1
    assert "your last /bench was less than 4 h ago" in replies(github)[-1]
    assert "try again in 4 h" in replies(github)[-1]
    # A plain /bench of the same person is bound by the same cooldown.
    send(services, "issue_comment", comment("/bench sglang-eagle3", comment_id=503, minute=3))
    assert "your last /bench was less than 4 h ago" in replies(github)[-1]


def test_the_pull_requests_cooldown_counts_anyones_bisect_on_it(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = PR_COOLING
    github.permissions[(REPO, "other")] = "write"
    shas = history(services, github, 6)
    send(services, "issue_comment", comment(f"/bench bisect {shas[0][:8]} {shas[3][:8]} sglang-eagle3"))
    later(services, 5)
    send(
        services,
        "issue_comment",
        comment(f"/bench bisect {shas[3][:8]} {shas[6][:8]}", login="other", comment_id=502, minute=6),
    )
    assert len(bisects(github)) == 1
    assert "the last /bench on this pull request was less than 60 min ago" in replies(github)[-1]


def test_after_the_cooldown_the_next_bisect_is_accepted(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = COOLING
    shas = history(services, github, 6)
    send(services, "issue_comment", comment(f"/bench bisect {shas[0][:8]} {shas[3][:8]} sglang-eagle3"))
    later(services, 4 * 60 + 1)
    send(
        services,
        "issue_comment",
        comment(f"/bench bisect {shas[3][:8]} {shas[6][:8]} sglang-eagle3", comment_id=502, minute=2),
    )
    assert len(bisects(github)) == 2


def test_a_bisect_handled_again_after_a_failed_dispatch_is_not_refused_by_its_own_case(services, github):
    """The comment handled again (the queue's retry) after its case was opened and its dispatch
    failed: its own case does not start the cooldown against it, and the bisect is dispatched."""
    github.files[(REPO, ".github/perfbot.yml", "main")] = COOLING
    shas = history(services, github, 6)
    asked = comment(f"/bench bisect {shas[0][:8]} {shas[3][:8]} sglang-eagle3")
    dispatch = github.dispatch

    def down(*args, **kwargs):
        raise ConnectionError("GitHub did not answer")

    github.dispatch = down
    with pytest.raises(ConnectionError):
        ROUTER.dispatch("issue_comment", asked, services)
    github.dispatch = dispatch
    send(services, "issue_comment", asked)  # the retry
    assert len(services.store.watch.cases(None)) == 1 and len(bisects(github)) == 1
    assert not any("less than 4 h ago" in reply for reply in replies(github)), replies(github)


def test_two_bisects_asked_at_once_by_one_person_pass_the_cooldown_once(services, github):
    """Both comments handled at the same time, each having read the cooldowns before either opened
    its case (GitHub's compare of each range waits for the other): one bisect, one refusal."""
    github.files[(REPO, ".github/perfbot.yml", "main")] = COOLING
    shas = history(services, github, 6)
    both, compare = threading.Barrier(2), github.compare

    def compare_together(repo, base, head):
        both.wait(timeout=30)
        return compare(repo, base, head)

    github.compare = compare_together
    failures: list[BaseException] = []

    def ask(words: str, comment_id: int) -> None:
        try:
            ROUTER.dispatch(
                "issue_comment",
                comment(f"/bench bisect {words} sglang-eagle3", comment_id=comment_id),
                services,
            )
        except BaseException as error:  # noqa: BLE001 - reported by the test below
            failures.append(error)

    threads = [
        threading.Thread(target=ask, args=(f"{shas[0][:8]} {shas[3][:8]}", 501)),
        threading.Thread(target=ask, args=(f"{shas[3][:8]} {shas[6][:8]}", 502)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures
    drain(services)
    assert len(services.store.watch.cases(None)) == 1 and len(bisects(github)) == 1
    assert sum("your last /bench was less than 4 h ago" in reply for reply in replies(github)) == 1


@pytest.mark.parametrize(
    ("words", "says"),
    [
        ("{5} {2}", "the range is reversed: {2:.12} is 3 commits before {5:.12}"),
        ("{2} {2}", "the good and the bad commit are the same"),
        ("{2:.7} {2:.8}", "{2:.7} and {2:.8} are one commit, {2:.12}, written two ways"),
        ("{2} {lone}", "GitHub cannot compare {2:.12} with {lone:.12}: unknown or unrelated"),
    ],
)
def test_a_range_that_cannot_be_bisected_is_refused_before_anything_is_opened(services, github, words, says):
    shas = history(services, github, 6)
    lone = "f" * 40  # recorded as a merge, but sharing no history with the others
    history_of_lone = Merge(
        repo=REPO,
        number=99,
        title="lone",
        merge_sha=lone,
        head_sha="9" * 40,
        score=1,
        level="low",
        merged_at=NOW,
        url=None,
    )
    services.store.dashboard.record_merge(history_of_lone)
    send(services, "issue_comment", comment("/bench bisect " + words.format(*shas, lone=lone)))
    assert bisects(github) == [] and services.store.watch.cases(None) == []
    expected = says.format(*shas, lone=lone)
    assert expected in replies(github)[-1], replies(github)[-1]


def test_a_range_over_the_cap_is_refused_with_its_count_and_the_cap(services, github):
    shas = history(services, github, policy.MAX_BISECT_COMMITS + 2)
    send(services, "issue_comment", comment(f"/bench bisect {shas[0][:8]} {shas[-1][:8]}"))
    assert bisects(github) == [] and services.store.watch.cases(None) == []
    assert (
        f"holds {policy.MAX_BISECT_COMMITS + 2} commits, more than the {policy.MAX_BISECT_COMMITS} "
        "a /bench bisect takes" in replies(github)[-1]
    )


def test_a_range_at_the_cap_is_bisected(services, github):
    shas = history(services, github, policy.MAX_BISECT_COMMITS)
    send(services, "issue_comment", comment(f"/bench bisect {shas[0][:8]} {shas[-1][:8]} sglang-eagle3"))
    [dispatched] = bisects(github)
    assert (dispatched["inputs"]["base-sha"], dispatched["inputs"]["head-sha"]) == (shas[0], shas[-1])
