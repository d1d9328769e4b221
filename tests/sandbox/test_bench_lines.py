"""The sandbox says when a pull request's benchmark (a /bench) comes back, and only then: not for
a merge's run, nor for the bisect the watch dispatched (it said "a /bench came back" for it)."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

from bot.sandbox.runner import Key, Measured
from bot.sandbox.session import Options, Sandbox


def finished(run_id: int, mode: str, merge: bool, pull: str, seconds: float) -> dict:
    key = Key("a" * 40, "b" * 40, ("verify-step",), "3", "", True, mode)
    return {
        "run_id": run_id,
        "key": key,
        "measured": Measured(0, Path("."), "", seconds),
        "merge": merge,
        "pull": pull,
    }


def test_only_a_pull_requests_run_is_said_to_have_come_back(tmp_path):
    said: list[str] = []
    sandbox = Sandbox(Options(tmp_path), say=said.append)
    sandbox.reland = 11
    sandbox.runner = SimpleNamespace(  # type: ignore[assignment]
        finished=[
            finished(1, "bench", True, "", 20.0),  # a merge's
            finished(2, "bisect", False, "", 25.0),  # the watch's bisect
            finished(3, "bench", False, "11", 40.0),  # /bench on #11
        ]
    )
    watching = threading.Thread(target=sandbox.watch)
    watching.start()
    threading.Timer(1.5, sandbox._stopping.set).start()
    watching.join(10)
    assert not watching.is_alive()
    assert said == [
        f"  a /bench came back after 40 s of benchmarking: {sandbox.standin.base_url}/sandbox/mini-engine/pull/11"
    ]
