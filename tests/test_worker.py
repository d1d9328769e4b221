"""`perfbot worker`'s stop signals (`bot.worker`): one that comes at any instant is heard."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Python runs a signal's handler in the main thread between two of that thread's bytecodes, so
# possibly while it holds a lock. The child below holds, in turn, every lock that bot.worker keeps
# at module level (an Event's included: the main thread holds it for an instant as it enters and
# leaves a wait), and takes a SIGTERM each time; then asks whether the worker heard it.
HOLDS_EVERY_LOCK_AS_A_SIGTERM_COMES = textwrap.dedent(
    """
    import signal, threading
    from bot import worker

    worker._stop_on_signals()
    held = []
    for value in vars(worker).values():
        if isinstance(value, threading.Event):
            held.append(value._cond)
        elif isinstance(value, (threading.Condition, type(threading.Lock()))):
            held.append(value)
    for lock in held:
        with lock:
            signal.raise_signal(signal.SIGTERM)
    signal.raise_signal(signal.SIGTERM)
    print("heard" if worker.told_to_stop(0) else "not heard")
    """
)


def test_a_sigterm_that_comes_while_the_main_thread_holds_a_lock_stops_the_worker_without_a_hang():
    """Before, the handler set a `threading.Event`, and so took the Event's lock: a SIGTERM in the
    instant the main thread entered its wait, holding that lock, hung the worker for good (one
    run of make test in several, where the stop came as the worker started)."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", HOLDS_EVERY_LOCK_AS_A_SIGTERM_COMES],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("the stop signal's handler waited for a lock the main thread held") from None
    assert (done.returncode, done.stdout.strip()) == (0, "heard"), done.stderr


def test_told_to_stop_waits_for_a_signal_or_its_timeout():
    script = textwrap.dedent(
        """
        import os, signal, threading, time
        from bot import worker

        worker._stop_on_signals()
        started = time.monotonic()
        told = worker.told_to_stop(0.3)
        waited = time.monotonic() - started
        print(told, 0.3 <= waited < 5)
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        started = time.monotonic()
        print(worker.told_to_stop(None), time.monotonic() - started < 5, worker.stopped_by())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.stdout.split("\n")[:2] == ["False True", "True True [2]"], done.stderr
