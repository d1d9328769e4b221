"""The embedded queue's consumers as processes of their own, supervised by `perfbot serve`.

On the embedded SQLite queue, gunicorn's master starts each consumer as a `perfbot worker` child,
starts it again when it dies and stops it with the server. Reviews then run on an interpreter of
their own, at a lower CPU priority, so that they never hold the one that acknowledges deliveries.
The first consumer alone runs the periodic tasks, so that they run once however many there are.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger("perfbot.serve")

# Acknowledging a delivery must not wait behind a review: the kernel gives the consumers the CPU
# the web workers leave over. The niceness is added to the server's own.
NICENESS = 5
# A consumer that dies within STEADY_S of its start waits before its next start, doubling up to
# the last step, so that one that cannot start (a database it cannot open) does not spin.
STEADY_S = 30.0
RESTART_DELAYS_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
PR_SET_PDEATHSIG = 1  # Linux's prctl option: the signal a process gets when its parent dies


def worker_commands(count: int, threads: int) -> list[list[str]]:
    """``count`` `perfbot worker` commands on this interpreter, the first one running the periodic
    tasks: the consumers read the same settings from the same environment and working directory,
    so they share the server's queue and database files."""
    command = [sys.executable, "-m", "bot", "worker", "--threads", str(threads)]
    return [command if number == 1 else [*command, "--no-periodic"] for number in range(1, count + 1)]


@dataclass
class _Slot:
    number: int
    command: list[str]
    process: subprocess.Popen | None = None
    started: float = 0.0
    quick_exits: int = 0
    start_after: float = 0.0


class ConsumerProcesses:
    """A consumer process running each of ``commands`` (one restarted runs the same command);
    driven by the master's loop."""

    def __init__(self, commands: Sequence[Sequence[str]], clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._slots = [_Slot(number, list(command)) for number, command in enumerate(commands, 1)]
        self._stopping = False

    @property
    def pids(self) -> list[int]:
        return [slot.process.pid for slot in self._slots if slot.process is not None]

    def keep_running(self) -> None:
        """Start every consumer that is not running, once the delay after its last exit passed."""
        now = self._clock()
        for slot in self._slots:
            if self._stopping or slot.process is not None or now < slot.start_after:
                continue
            die_with_master = functools.partial(_die_with, os.getpid())
            # A process group of its own: a Ctrl-C at the terminal reaches the master alone, which
            # passes it on (`terminate`) once it knows it is stopping; were it the consumer's too,
            # the consumer could exit first and the master start another.
            slot.process = subprocess.Popen(slot.command, preexec_fn=die_with_master, process_group=0)
            slot.started = now
            _lower_priority(slot.process.pid)
            log.info("queue consumer started", extra={"consumer": slot.number, "pid": slot.process.pid})

    def reap(self) -> None:
        """Collect the consumers that exited and plan their restart. The master calls this before
        gunicorn's own reaping, whose ``waitpid(-1)`` would otherwise take their exit status."""
        now = self._clock()
        for slot in self._slots:
            if slot.process is None or slot.process.poll() is None:
                continue
            quick = now - slot.started < STEADY_S
            slot.quick_exits = slot.quick_exits + 1 if quick else 0
            delay = RESTART_DELAYS_S[min(slot.quick_exits, len(RESTART_DELAYS_S)) - 1] if quick else 0.0
            slot.start_after = now + delay
            if not self._stopping:
                log.error(
                    "queue consumer exited; starting another",
                    extra={
                        "consumer": slot.number,
                        "pid": slot.process.pid,
                        "status": _status(slot.process.returncode),
                        "restart_in_s": delay,
                    },
                )
            slot.process = None

    def terminate(self, quick: bool = False) -> None:
        """Ask every consumer to stop and start no more: SIGTERM, each finishes the jobs it holds
        (within its --stop-timeout); ``quick`` (a Ctrl-C), SIGINT: each stops now, leaving its
        running jobs pending for the next consumer (`bot.worker`)."""
        self._stopping = True
        for slot in self._slots:
            if slot.process is not None and slot.process.poll() is None:
                slot.process.send_signal(signal.SIGINT if quick else signal.SIGTERM)

    def wait(self, timeout: float, quick: bool = False) -> None:
        """Wait up to ``timeout`` seconds in all for the consumers to exit, then kill the rest: a job
        killed half-done stays pending in the store and the stale-delivery sweep enqueues it again.
        After a ``quick`` stop (a Ctrl-C) that is expected of a consumer still starting on a busy
        machine, so it is said as information, not as a warning."""
        deadline = time.monotonic() + timeout
        for slot in self._slots:
            if slot.process is None:
                continue
            try:
                slot.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                (log.info if quick else log.warning)(
                    "queue consumer still running %.0f s after the %s stop; killed, its running jobs "
                    "stay pending for the next consumer",
                    timeout,
                    "quick" if quick else "graceful",
                    extra={"consumer": slot.number, "pid": slot.process.pid},
                )
                slot.process.kill()
                slot.process.wait()
            slot.process = None


def _die_with(master: int) -> None:
    """In the consumer, before it runs: the kernel kills it when the server's ``master`` dies
    without stopping it (SIGKILL, a crash), so that a server started again never shares the queue
    with consumers of the last one. A job killed so stays pending in the store for the sweep.
    Linux only: elsewhere the consumer outlives a master that was killed.

    SIGINT (the master's quick stop) is blocked until `perfbot worker` has its handler: one sent
    while the consumer still starts (imports take seconds on a loaded machine) waits for it, instead
    of a KeyboardInterrupt traceback in the middle of an import."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != master:  # it died before the prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)


def _lower_priority(pid: int) -> None:
    with contextlib.suppress(OSError):  # it exited already: reap() sees to it
        os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, 0) + NICENESS)


def _status(returncode: int) -> str:
    if returncode >= 0:
        return f"exit {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"
