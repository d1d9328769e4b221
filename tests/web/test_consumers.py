"""The consumer processes `perfbot serve` supervises: started at a lower CPU priority, started
again after an exit (later when they keep dying at start-up), stopped with SIGTERM, then killed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bot.web.consumers import NICENESS, ConsumerProcesses, worker_commands
from tests.support.github_emulator import wait_for
from tests.support.serving import alive

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def niceness(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def exited(consumers: ConsumerProcesses) -> bool:
    consumers.reap()
    return not consumers.pids


def test_consumers_run_at_a_lower_priority_and_sigterm_stops_them():
    consumers = ConsumerProcesses([SLEEPER, SLEEPER])
    consumers.keep_running()
    try:
        pids = consumers.pids
        assert len(set(pids)) == 2 and all(alive(pid) for pid in pids)
        assert {niceness(pid) for pid in pids} == {os.getpriority(os.PRIO_PROCESS, 0) + NICENESS}
        consumers.keep_running()
        assert consumers.pids == pids  # running ones are left alone
    finally:
        consumers.terminate()
        consumers.wait(10)
    assert consumers.pids == [] and not any(alive(pid) for pid in pids)
    consumers.keep_running()
    assert consumers.pids == []  # stopping for good: nothing new starts


def test_a_consumer_that_ignores_sigterm_is_killed_after_the_timeout(tmp_path):
    ready = tmp_path / "ready"
    stubborn = [
        sys.executable,
        "-c",
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(ready)!r}, 'w').close(); time.sleep(60)",
    ]
    consumers = ConsumerProcesses([stubborn])
    consumers.keep_running()
    [pid] = consumers.pids
    assert wait_for(ready.exists, timeout=30)
    consumers.terminate()
    consumers.wait(0.5)
    assert consumers.pids == [] and not alive(pid)


def test_a_dead_consumer_is_started_again_and_one_that_keeps_dying_at_start_up_waits_longer_each_time():
    clock = Clock()
    consumers = ConsumerProcesses([[sys.executable, "-c", "raise SystemExit(3)"]], clock)
    consumers.keep_running()
    delays = []
    for _ in range(3):
        assert len(consumers.pids) == 1
        assert wait_for(lambda: exited(consumers), timeout=30)
        waited = 0.0
        while not consumers.pids:  # started again only once its delay passed
            clock.now += 0.5
            waited += 0.5
            consumers.keep_running()
        delays.append(waited)
    consumers.terminate()
    consumers.wait(10)
    assert delays == [1.0, 2.0, 4.0]


def test_a_consumer_that_ran_steadily_is_started_again_at_once():
    clock = Clock()
    consumers = ConsumerProcesses([SLEEPER], clock)
    consumers.keep_running()
    [first] = consumers.pids
    try:
        clock.now += 3600
        os.kill(first, 9)
        assert wait_for(lambda: exited(consumers), timeout=30)
        consumers.keep_running()
        [second] = consumers.pids
        assert second != first and alive(second)
    finally:
        consumers.terminate()
        consumers.wait(10)


def test_a_consumer_dies_with_a_master_killed_before_it_could_stop_it(tmp_path):
    pid_file = tmp_path / "consumer.pid"
    master = (
        "import sys, time; from bot.web.consumers import ConsumerProcesses; "
        f"consumers = ConsumerProcesses([{SLEEPER!r}]); consumers.keep_running(); "
        f"open({str(pid_file)!r}, 'w').write(str(consumers.pids[0])); time.sleep(60)"
    )
    process = subprocess.Popen([sys.executable, "-c", master], cwd=Path(__file__).parents[2])
    try:
        assert wait_for(lambda: pid_file.exists() and pid_file.read_text(), timeout=30)
        consumer = int(pid_file.read_text())
        assert alive(consumer)
    finally:
        process.kill()
        process.wait()
    assert wait_for(lambda: not alive(consumer), timeout=10)


def test_the_consumers_are_perfbot_workers_on_this_interpreter_and_the_first_alone_runs_periodic_tasks():
    worker = [sys.executable, "-m", "bot", "worker", "--threads", "3"]
    assert worker_commands(1, 3) == [worker]
    assert worker_commands(3, 3) == [worker, [*worker, "--no-periodic"], [*worker, "--no-periodic"]]
