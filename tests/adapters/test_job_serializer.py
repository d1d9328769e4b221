"""Queued jobs travel as JSON: what a consumer reads from SQLite or Redis is never unpickled, a
scheduled retry keeps its time, and only plain values can be queued."""

from __future__ import annotations

import datetime
import json
import pickle
import threading
import uuid

import pytest
from huey.registry import Message
from hypothesis import given
from hypothesis import strategies as st

from bot.adapters.job_serializer import JsonSerializer
from bot.adapters.queue import HueyQueue
from bot.service.failures import RetryLater
from tests.support.github_emulator import wait_for


class OpensAFile:
    """Unpickling this creates ``path``: the proof that a payload was unpickled."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def consume(queue: HueyQueue, until) -> None:
    consumer = queue.consumer(workers=1, in_process=True)
    consumer.start()
    try:
        assert wait_for(until)
    finally:
        consumer.stop(graceful=True)


@pytest.fixture(params=["sqlite", "redis"])
def queue_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'q.db'}"
    return request.getfixturevalue("redis_url")  # an emptied Redis database


def test_a_queued_job_is_a_json_object_naming_the_task_and_the_delivery(tmp_path):
    queue = HueyQueue(f"sqlite:///{tmp_path / 'q.db'}")
    queue.bind(lambda _: None, lambda: None)
    queue.enqueue(42)
    (raw,) = queue.huey.storage.enqueued_items()
    message = json.loads(raw)
    assert message["name"].endswith(".perfbot.process_delivery")  # huey prefixes the binding module
    assert (message["args"], message["retries"], message["eta"]) == ([42], 0, None)


def test_a_pickled_payload_in_the_queue_is_refused_and_the_next_job_still_runs(queue_url, tmp_path):
    queue = HueyQueue(queue_url)
    done: list[int] = []
    queue.bind(done.append, lambda: None)
    marker = tmp_path / "unpickled"
    queue.huey.storage.enqueue(pickle.dumps(OpensAFile(marker)))
    queue.enqueue(5)
    consume(queue, lambda: done == [5])
    assert not marker.exists()


def test_a_retry_scheduled_for_later_keeps_its_time_and_runs(tmp_path):
    queue = HueyQueue(f"sqlite:///{tmp_path / 'q.db'}")
    attempts: list[int] = []
    lock = threading.Lock()

    def flaky(delivery_id: int) -> None:
        with lock:
            attempts.append(delivery_id)
        if len(attempts) == 1:
            raise RetryLater(0.3)

    queue.bind(flaky, lambda: None)
    queue.enqueue(9)
    consume(queue, lambda: attempts == [9, 9])


def test_only_plain_values_are_queued(tmp_path):
    queue = HueyQueue(f"sqlite:///{tmp_path / 'q.db'}")
    queue.bind(lambda _: None, lambda: None)
    with pytest.raises(TypeError, match="JSON value"):
        queue.enqueue(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="only job messages"):
        JsonSerializer().serialize({"not": "a message"})


@pytest.mark.parametrize(
    "payload",
    [
        b"\x80\x04K\x05.",  # pickle of 5
        b"[1, 2]",
        b'{"name": "perfbot.process_delivery"}',
        json.dumps({**{field: None for field in Message._fields}, "name": 3, "args": []}).encode(),
        b"\xff\xfe",
    ],
)
def test_anything_but_a_job_message_is_refused(payload):
    with pytest.raises(ValueError, match="not a perfbot job message"):
        JsonSerializer().deserialize(payload)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
times = st.none() | st.datetimes(timezones=st.none() | st.just(datetime.UTC))


@given(
    args=st.lists(json_values, max_size=3),
    kwargs=st.none() | st.dictionaries(st.text(), json_values, max_size=3),
    eta=times,
    retries=st.integers(0, 10),
    retry_delay=st.floats(0, 60),
    expires_resolved=times,
)
def test_a_message_reads_back_as_written(args, kwargs, eta, retries, retry_delay, expires_resolved):
    message = Message(
        str(uuid.uuid4()),
        "perfbot.process_delivery",
        eta,
        retries,
        retry_delay,
        None,
        tuple(args),
        kwargs,
        None,
        Message("id-2", "perfbot.requeue_stale", eta=eta, args=()),
        None,
        expires_resolved,
    )
    serializer = JsonSerializer()
    assert serializer.deserialize(serializer.serialize(message)) == message
