"""Process checks shared by the runner and CLI tests."""

from __future__ import annotations

from pathlib import Path


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
