"""A pull request's risk assessment (`bot.core.review.plan.assess`) in a process of its own, at
the lowest CPU priority: how `perfbot worker` scores the diffs it reviews.

Scoring a 5,000-line diff is 0.1 s of pure Python. On a consumer thread it took the interpreter
from the threads holding a SQLite file's writer lock, which then waited with the lock held while
the intake waited for the lock (docs/performance.md, "Webhook intake"). In a process of its own it
takes only a CPU, and at the lowest priority only what the intake and the consumers leave.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from bot.core.review import plan as review_plan

LOWEST_PRIORITY = 19  # the niceness of the scoring process
PR_SET_PDEATHSIG = 1  # Linux's prctl option: the signal a process gets when its parent dies


class ScoringProcess:
    """`review_plan.assess` run in one process, started at the first call, for all the threads of
    this one (a review waits for its turn: scoring never takes more than one CPU). One that died
    (killed, out of memory) fails the calls it was running, and the next call starts another."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def __call__(self, facts: review_plan.PullFacts) -> review_plan.Assessment:
        pool = self._started()
        try:
            return pool.submit(review_plan.assess, facts).result()
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            raise

    def start(self) -> Future[int]:
        """Start the process now rather than at the first review, which would otherwise wait for a
        fresh interpreter to start and import the scoring (2.7 s on a busy 2-core machine against
        0.3 s for the review itself): the pid of the process, once it is ready."""
        return self._started().submit(os.getpid)

    def _started(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # Not forked from this process, whose other threads may hold locks: a fresh
                # interpreter, and this process's own child, so that it dies with this one (a
                # forkserver's child outlived a consumer killed with SIGKILL, and kept the
                # forkserver alive with it).
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(
                    1, mp_context=context, initializer=_scoring_process, initargs=(os.getpid(),)
                )
            return self._pool

    def close(self) -> None:
        """End the process now, without waiting for it to read its stop: at the lowest priority on
        busy CPUs that took seconds, which the worker's exit waited for (the interpreter joins the
        pool's thread at exit, and that thread joins the process)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        for process in list((pool._processes or {}).values()):  # the pool's own record of them
            process.kill()
        # Then the pool's thread, which sees its process gone and ends at once: left running, it
        # raced the interpreter's exit, which wakes it through a pipe that it may have closed
        # ("Exception ignored in: <module 'threading'>" on the worker's output).
        pool.shutdown(wait=True, cancel_futures=True)


def _scoring_process(parent: int) -> None:
    """In the scoring process, before its first call: the lowest priority, and gone with its
    ``parent``, the process that scores through it (a kill -9 included): multiprocessing's resource
    tracker then sees both gone and ends too. The parent's pid comes from the parent: one killed
    while this process still started (seconds, at this priority on busy CPUs) has left it to
    another, whose pid the child would otherwise take for its parent's, and live on."""
    os.setpriority(os.PRIO_PROCESS, 0, LOWEST_PRIORITY)
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the prctl took effect
        os._exit(1)
