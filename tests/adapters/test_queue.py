"""The huey queue on its SQLite file and on Redis: a consumer runs what was enqueued."""

from __future__ import annotations

import threading
import time

import pytest
from huey.constants import EmptyData

from bot.adapters.queue import HueyQueue, build_huey
from bot.adapters.sqlite_files import WriterLock, lock_file_beside
from bot.service.failures import RetryLater
from tests.support.github_emulator import wait_for


def run_through(queue: HueyQueue) -> list[int]:
    """Enqueue three jobs that return a value, consume them, and give back what ran."""
    done: list[int] = []
    lock = threading.Lock()
    swept = threading.Event()

    def process(delivery_id: int) -> str:
        with lock:
            done.append(delivery_id)
        return "done"

    queue.bind(process, swept.set)
    for delivery_id in (1, 2, 3):
        queue.enqueue(delivery_id)
    consumer = queue.consumer(workers=2, in_process=True)
    consumer.start()
    try:
        # The consumer also enqueues the minutely sweep as it starts: wait until that job ran too,
        # so that nothing the consumer was given is still queued when it stops.
        assert wait_for(lambda: len(done) == 3 and swept.is_set(), timeout=30)
    finally:
        consumer.stop(graceful=True)
    return sorted(done)


def test_the_embedded_sqlite_queue_delivers_each_job(tmp_path):
    queue = HueyQueue(f"sqlite:///{tmp_path / 'q.db'}")
    assert queue.embedded
    queue.ping()
    assert run_through(queue) == [1, 2, 3]
    assert queue.pending() == 0


def test_jobs_wait_in_the_sqlite_file_until_a_consumer_starts(tmp_path):
    first = HueyQueue(f"sqlite:///{tmp_path / 'q.db'}")
    first.bind(lambda _: None, lambda: None)
    first.enqueue(7)
    assert HueyQueue(f"sqlite:///{tmp_path / 'q.db'}").pending() == 1


def test_the_redis_queue_delivers_each_job(redis_url):
    queue = HueyQueue(redis_url)
    assert not queue.embedded
    queue.ping()
    assert run_through(queue) == [1, 2, 3]


def test_a_job_that_asks_for_a_retry_runs_again_and_one_that_raises_does_not(tmp_path):
    queue = HueyQueue(f"sqlite:///{tmp_path / 'q.db'}")
    attempts: list[int] = []

    def flaky(delivery_id: int) -> None:
        attempts.append(delivery_id)
        if len(attempts) == 1:
            raise RetryLater(0.0)  # the job decided: another attempt
        if len(attempts) == 2:
            raise RuntimeError("not a retry: the queue runs it no more")

    queue.bind(flaky, lambda: None)
    queue.enqueue(1)
    consumer = queue.consumer(workers=1, in_process=True)
    consumer.start()
    try:
        assert wait_for(lambda: len(attempts) == 2)
        queue.enqueue(2)
        assert wait_for(lambda: len(attempts) == 3)
        assert not wait_for(lambda: len(attempts) > 3, timeout=1.5)
    finally:
        consumer.stop(graceful=True)


def test_only_a_periodic_consumer_enqueues_the_periodic_tasks(tmp_path):
    queue = HueyQueue(f"sqlite:///{tmp_path / 'q.db'}")
    sweeps: list[int] = []
    queue.bind(lambda _: None, lambda: sweeps.append(1))
    quiet = queue.consumer(workers=1, in_process=True, periodic=False)
    quiet.start()
    try:
        time.sleep(3)  # three turns of its scheduler (one a second), the first at once
        assert sweeps == [] and queue.pending() == 0
        periodic = queue.consumer(workers=1, in_process=True)
        periodic.start()
        try:
            assert wait_for(lambda: sweeps == [1], timeout=30)
        finally:
            periodic.stop(graceful=True)
    finally:
        quiet.stop(graceful=True)
    assert sweeps == [1] and queue.pending() == 0


def test_an_unknown_queue_url_is_refused():
    with pytest.raises(ValueError, match="unsupported queue URL"):
        build_huey("amqp://localhost")


def test_finished_jobs_leave_nothing_behind_in_the_queue(tmp_path):
    queue = HueyQueue(f"sqlite:///{tmp_path / 'q.db'}")
    run_through(queue)
    assert queue.huey.storage.result_store_size() == 0 and queue.pending() == 0


def test_a_finished_job_takes_the_queues_writer_lock_only_to_take_a_job(tmp_path):
    """huey pops each finished task's revoke flag, which perfbot never sets: a write, once a
    delivery, that the intake's enqueue queued behind (the intake benchmark's consumer held the
    queue's writer lock 2.2 s in 30 s for it). A flag that is not there is found so by a read."""
    queue = HueyQueue(f"sqlite:///{tmp_path / 'q.db'}")
    storage = queue.huey.storage
    storage.put_data("flag", b"1")
    held = WriterLock(lock_file_beside(str(tmp_path / "q.db")))  # another process's, in effect
    answers: list[object] = []
    with held:
        reader = threading.Thread(target=lambda: answers.append(storage.pop_data("no-such-flag")))
        reader.start()
        reader.join(timeout=5)
        assert not reader.is_alive(), "popping an absent key waited for the writer lock"
    assert answers == [EmptyData]
    assert storage.pop_data("flag") == b"1" and storage.peek_data("flag") is EmptyData
