"""Process checks shared by the runner and CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.runner import scope


def running(pid: int) -> bool:
    """Alive and not a zombie waiting for the container's init to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def running_with(argument: str) -> list[int]:
    """The live processes whose command line has ``argument``: what a benchmark started is found this
    way, since inside a PID namespace of its own it cannot tell its pid as the tests see it."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argument.encode() in argv and running(int(entry.name)):
            found.append(int(entry.name))
    return found


def scope_available(name: str) -> bool:
    """Whether this machine gives a benchmark command the scope ``name`` (`bot.runner.scope`)."""
    try:
        return scope._strategy(name).name == name
    except scope.ScopeError:
        return False


# Each Linux scope as a test parameter, skipped where the machine refuses it.
SCOPES = [
    pytest.param(name, marks=pytest.mark.skipif(not scope_available(name), reason=f"no {name} here"))
    for name in ("pid-namespace", "processes")
]
