"""The reviews' risk assessment in a process of its own: the same answer as on the calling
thread, at the lowest CPU priority, and another process once one died."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

from bot.adapters.scoring_process import LOWEST_PRIORITY, ScoringProcess
from bot.core.config.schema import RepoConfig
from bot.core.review import plan as review_plan
from tests.service import diffs

FACTS = review_plan.PullFacts(
    html_url="https://github.com/o/r/pull/7",
    head_sha="a" * 40,
    default_branch="main",
    diff=diffs.HIGH,
    config=RepoConfig(),
)


@pytest.fixture
def scoring():
    process = ScoringProcess()
    yield process
    process.close()


def scoring_pid(scoring: ScoringProcess) -> int:
    [pid] = list(scoring._pool._processes)
    return pid


def test_the_scoring_process_assesses_as_the_calling_thread_would(scoring):
    assert scoring(FACTS) == review_plan.assess(FACTS)
    pid = scoring_pid(scoring)
    assert pid != os.getpid()
    assert os.getpriority(os.PRIO_PROCESS, pid) == LOWEST_PRIORITY
    assert scoring(FACTS) == review_plan.assess(FACTS)
    assert scoring_pid(scoring) == pid, "one process for every review, not one each"


def test_a_scoring_process_that_died_fails_its_review_and_the_next_one_starts_another(scoring):
    scoring(FACTS)
    pid = scoring_pid(scoring)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the review that finds it dead fails (its delivery retries)
        try:
            scoring(FACTS)
        except BrokenProcessPool:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the dead scoring process went unnoticed")
    assert scoring(FACTS) == review_plan.assess(FACTS)
    assert scoring_pid(scoring) != pid
