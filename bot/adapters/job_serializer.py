"""The wire format of queued jobs: JSON, never pickle.

huey pickles its messages by default, so anyone who can write to the queue (a Redis shared with
other services, a leaked password) could make every consumer run code of their choosing. A job
here is a task name and a delivery id; this serializer writes huey's message as a JSON object of
plain values and reads back only that, so a payload that is anything else is refused, not run.
"""

from __future__ import annotations

import datetime
import json

from huey.registry import Message
from huey.serializer import Serializer

# Message fields that hold a datetime (the others are strings, numbers, lists or null).
_DATETIMES = ("eta", "expires_resolved")
_NESTED = ("on_complete", "on_error")


class JsonSerializer(Serializer):
    """huey's ``serializer=`` hook: messages as JSON objects of plain values."""

    def _serialize(self, data: object) -> bytes:
        if not isinstance(data, Message):
            raise TypeError(f"only job messages are queued, not {type(data).__name__}")
        return json.dumps(_to_plain(data), separators=(",", ":"), allow_nan=False).encode()

    def _deserialize(self, data: bytes) -> Message:
        try:
            return _from_plain(json.loads(data))
        except (ValueError, TypeError, KeyError) as error:  # UnicodeDecodeError and JSONDecodeError too
            raise ValueError(f"not a perfbot job message: {error}") from None


def _to_plain(message: Message) -> dict:
    if message.chord_config is not None:
        raise TypeError("chords are not used by perfbot and cannot be queued")
    plain = message._asdict()
    for name in _DATETIMES:
        if plain[name] is not None:
            plain[name] = plain[name].isoformat()
    for name in _NESTED:
        if plain[name] is not None:
            plain[name] = _to_plain(plain[name])
    if isinstance(plain["expires"], datetime.datetime | datetime.timedelta):
        raise TypeError("job expiry must be given in seconds")
    plain["args"] = list(plain["args"] or ())
    _check_plain(plain["args"])
    _check_plain(plain["kwargs"])
    return plain


def _from_plain(plain: object) -> Message:
    if not isinstance(plain, dict) or set(plain) != set(Message._fields):
        raise ValueError("a job message is an object with exactly huey's message fields")
    fields = dict(plain)
    for name in _DATETIMES:
        if fields[name] is not None:
            fields[name] = datetime.datetime.fromisoformat(fields[name])
    for name in _NESTED:
        if fields[name] is not None:
            fields[name] = _from_plain(fields[name])
    if not isinstance(fields["name"], str) or not isinstance(fields["args"], list):
        raise ValueError("a job message names its task and lists its arguments")
    if fields["kwargs"] is not None and not isinstance(fields["kwargs"], dict):
        raise ValueError("a job message's keyword arguments are an object")
    if fields["chord_config"] is not None:
        raise ValueError("chords are not used by perfbot")
    fields["args"] = tuple(fields["args"])
    return Message(**fields)


def _check_plain(value: object) -> None:
    """Job arguments are JSON values already: nothing that JSON would change or could not hold."""
    if value is None or isinstance(value, bool | int | float | str):
        return
    if isinstance(value, list):
        for item in value:
            _check_plain(item)
    elif isinstance(value, dict) and all(isinstance(key, str) for key in value):
        for item in value.values():
            _check_plain(item)
    else:
        raise TypeError(f"a job argument must be a JSON value, not {type(value).__name__}")
