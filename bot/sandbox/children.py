"""The sandbox's child processes die with it: `perfbot serve` and the benchmarks it runs are told
by the kernel when the sandbox dies without stopping them (SIGKILL, a crash), through Linux's
parent-death signal; the signals it can catch, it handles itself (`session.Sandbox.run`).

The signal goes to a child when the *thread* that started it ends, not only the process: start the
children from threads that live as long as the sandbox (its main thread, the runner's workers).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # Linux's prctl option: the signal a process gets when its parent dies
# Loaded here, in the parent: after a fork of a process with threads, a child may not load a library.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def dying_with_this_process(sig: signal.Signals = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` for `subprocess.Popen`: the child gets ``sig`` when this process dies (SIGTERM:
    `perfbot serve` then stops its own children; a benchmark removes its worktrees). Elsewhere than
    on Linux it does nothing: such a child outlives a sandbox that was killed."""
    parent = os.getpid()

    def preexec() -> None:
        if _LIBC is None:
            return
        _LIBC.prctl(PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:  # the parent died before the prctl took effect
            os.kill(os.getpid(), sig)

    return preexec
