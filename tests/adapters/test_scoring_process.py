"""The reviews' risk assessment in a process of its own: the same answer as on the calling
thread, at the lowest CPU priority, and another process once one died."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

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


# A process that scores through a `ScoringProcess`, then says its scoring process's pid and the
# pid of multiprocessing's resource tracker, and waits to be killed.
SCORER = """
import multiprocessing.resource_tracker as tracker, sys, time
from bot.adapters.scoring_process import ScoringProcess
from tests.adapters.test_scoring_process import FACTS, scoring_pid
scoring = ScoringProcess()
scoring(FACTS)
print(scoring_pid(scoring), tracker._resource_tracker._pid, flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_consumer_killed_with_sigkill_leaves_no_scoring_process_behind():
    """Its scoring process and multiprocessing's resource tracker end with it (a forkserver's child
    outlived the consumer and kept the forkserver alive: three processes left per crash)."""
    scorer = subprocess.Popen(
        [sys.executable, "-c", SCORER], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2]
    )
    try:
        scoring, tracker = (int(pid) for pid in scorer.stdout.readline().split())
        assert alive(scoring) and alive(tracker)
    finally:
        scorer.kill()
        scorer.wait()
    deadline = time.monotonic() + 10
    while (alive(scoring) or alive(tracker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in (scoring, tracker) if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "left running after the consumer was killed"


def test_a_scoring_process_started_ahead_scores_the_first_review_itself(scoring):
    """`perfbot worker` starts it with the worker: the first review then finds it ready rather
    than waiting for a fresh interpreter to start and import the scoring."""
    pid = scoring.start().result(timeout=60)
    assert pid != os.getpid()
    assert scoring_pid(scoring) == pid
    assert scoring(FACTS) == review_plan.assess(FACTS)
    assert scoring_pid(scoring) == pid, "the review started another process"


# A process with a scoring process started, which says that one's pid, then closes it and exits
# when told to.
CLOSER = """
import sys
from bot.adapters.scoring_process import ScoringProcess
scoring = ScoringProcess()
print(scoring.start().result(timeout=60), flush=True)
sys.stdin.readline()
scoring.close()
"""


def test_a_worker_closing_its_scoring_process_exits_without_waiting_for_it():
    """A scoring process that gets no CPU (the lowest priority on busy CPUs; here, stopped) does not
    keep its worker from exiting: before, the worker's exit waited until it read its stop, and
    `perfbot serve`'s stop under load took over 30 s."""
    closer = subprocess.Popen(
        [sys.executable, "-c", CLOSER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    scoring = int(closer.stdout.readline())
    os.kill(scoring, signal.SIGSTOP)
    try:
        closer.stdin.write("close\n")
        closer.stdin.flush()
        try:
            closer.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("the worker waited for its scoring process to exit")
    finally:
        closer.kill()
        closer.wait()
        if alive(scoring):
            os.kill(scoring, signal.SIGKILL)
    assert closer.returncode == 0


# A process that starts its scoring process and is killed at once, while that one still starts.
KILLED_AT_START = """
import os, signal
from bot.adapters.scoring_process import ScoringProcess
ScoringProcess().start()
os.kill(os.getpid(), signal.SIGKILL)
"""


def marked(mark: str) -> list[int]:
    """The processes whose environment holds ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and mark.encode() in (entry / "environ").read_bytes()
                and alive(int(entry.name))
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_a_consumer_killed_while_its_scoring_process_starts_leaves_none_behind():
    """The scoring process took the pid of whoever adopted it for its parent's, and lived on, idle,
    holding the consumer's standard output (a test of `perfbot serve` then waited for it)."""
    mark = f"PERFBOT_TEST_MARK={os.getpid()}-{time.monotonic_ns()}"
    name, value = mark.split("=")
    subprocess.run(
        [sys.executable, "-c", KILLED_AT_START],
        cwd=Path(__file__).parents[2],
        env={**os.environ, name: value},
        timeout=60,
    )
    deadline = time.monotonic() + 30
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = marked(mark)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "left running after the consumer was killed"


def test_close_leaves_no_thread_of_the_pool_to_race_the_interpreter_s_exit(scoring):
    """The pool's thread, left running after close(), met the interpreter's exit, which wakes it
    through a pipe it may have closed: "Exception ignored in: <module 'threading'>" on the output
    of a worker stopped with a job still running."""
    scoring.start().result(timeout=60)
    scoring.close()
    assert [t.name for t in threading.enumerate() if type(t).__name__ == "_ExecutorManagerThread"] == []
