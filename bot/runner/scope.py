"""The scope of one benchmark command: every process it starts, found and ended when it is done.

A benchmark runs the code under test, and a process of it that calls ``setsid()`` leaves the
session and process group that a plain ``killpg`` ends. Such a process could wait for perfbot to
finish and rewrite what perfbot wrote. So each command runs in a scope that perfbot ends completely,
chosen once per perfbot process (`strategy`):

- ``pid-namespace`` (where the kernel allows it: root, or unprivileged user namespaces): the command
  runs under a small init of its own as the first process of a new PID namespace, with a fresh
  ``/proc`` (``unshare --pid --fork --kill-child --mount-proc``, with ``--user --map-current-user
  --keep-caps`` when perfbot is not root). When the command exits, the init exits, and the kernel
  kills every process left in the namespace; none of them can see, signal or trace perfbot or
  anything else outside it. The namespace has mounts of its own (``--mount-proc``), and the init
  first makes the folders the command must not change (the other side's worktree, perfbot's own
  files: `bot.runner.integrity.fenced`) read-only there, then drops every capability, so that a
  command that is not root cannot make them writable again (`Strategy.read_only`; where the kernel
  refuses those mounts, the namespace still runs, without them).
- ``processes`` (the fallback, where namespaces are refused: a container without ``CAP_SYS_ADMIN``,
  user namespaces disabled; or asked for with ``PERFBOT_ROUND_SCOPE=processes``): while the command
  runs, perfbot is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so a process of the round whose
  parent dies is re-parented to perfbot, never to init, whatever session or group it moved to.
- ``session`` (not Linux): the process group only, as before; docs/runner.md says what it leaves.

Either way, the end is the same sweep: the command's descendants, the processes re-parented to
perfbot during the command, and every process whose environment carries the command's random token
(`SCOPE_VARIABLE`), each with all its descendants, are sent SIGTERM, then stopped (SIGSTOP, until no
new one appears, so that none can fork away) and killed (SIGKILL), and perfbot reaps those that are
its children. Scopes live side by side (both sides' workers, the spares): a child of perfbot that
is the command of another scope still alive, or carries its token, is that scope's, not this
one's. Processes that perfbot itself started for other purposes (probes, git) stay in perfbot's
session and are never members.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

SCOPE_VARIABLE = "PERFBOT_SCOPE"  # holds the scope's random id
STRATEGY_VARIABLE = "PERFBOT_ROUND_SCOPE"
STRATEGIES = ("auto", "pid-namespace", "processes")
GRACE_SECONDS = 5  # between SIGTERM and SIGKILL for a command still running
_LEFTOVER_GRACE = 0.05  # the same for what a command that exited left behind
_MAX_LOOKS = 1000  # at the end of a scope: a bound for a member that cannot be stopped and forks on
_REAP_SECONDS = 10
_PR_SET_CHILD_SUBREAPER = 36
_PROC = Path("/proc")

# The init of a command's PID namespace: makes the folders it is given read-only in the namespace's
# own mounts, gives up every capability it had for that, starts the command, reaps every orphan of
# the namespace (an init's duty), and when the command ends writes how it ended
# (``os.waitstatus_to_exitcode``) to the descriptor perfbot gave it and exits, which ends the
# namespace and everything left in it. The command is its child, not PID 1 itself, so that it keeps
# the signal behaviour it has elsewhere. Each folder is bound onto itself with everything mounted
# under it, then every mount there is remounted read-only with the flags it had (a user namespace
# may not clear nosuid, nodev, noexec or an atime flag of a mount it did not make).
_INIT = r"""
import ctypes, json, os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)  # an init ignores what it does not handle
report, lc_ctype, protect, argv = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), sys.argv[4:]
os.set_inheritable(report, False)
libc = ctypes.CDLL(None, use_errno=True)
def refuse(what):
    os.write(report, what.encode())
    os._exit(127)
def mounts_at_or_under(path):
    with open("/proc/self/mountinfo", "rb") as table:
        points = [line.split()[4].decode("unicode_escape").encode("latin-1").decode() for line in table]
    return [p for p in points if p == path or p.startswith(path.rstrip("/") + "/")]
KEPT = ((os.ST_NOSUID, 2), (os.ST_NODEV, 4), (os.ST_NOEXEC, 8), (os.ST_NOATIME, 1024),
        (os.ST_NODIRATIME, 2048), (os.ST_RELATIME, 1 << 21))
for path in protect:
    if libc.mount(path.encode(), path.encode(), None, 4096 | 16384, None) != 0:  # MS_BIND | MS_REC
        refuse(f"mount {ctypes.get_errno()} {path}")
    for point in mounts_at_or_under(path):
        flags, kept = 32 | 4096 | 1, os.statvfs(point).f_flag  # MS_REMOUNT | MS_BIND | MS_RDONLY
        flags |= sum(bit for have, bit in KEPT if kept & have)
        if not kept & (os.ST_NOATIME | os.ST_RELATIME):
            flags |= 1 << 24  # MS_STRICTATIME: the atime rule it had
        if libc.mount(None, point.encode(), None, flags, None) != 0:
            refuse(f"mount {ctypes.get_errno()} {point}")
class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL: the command inherits no capability
if libc.capset(ctypes.byref(Header(0x20080522, 0)), ctypes.byref((ctypes.c_uint32 * 6)())) != 0:
    refuse(f"capset {ctypes.get_errno()} -")
if lc_ctype == "-":
    os.environ.pop("LC_CTYPE", None)  # set by Python's locale coercion, not by perfbot
else:
    os.environ["LC_CTYPE"] = lc_ctype[1:]
try:
    child = os.posix_spawnp(argv[0], argv, os.environ)
except OSError as error:
    refuse(f"spawn {error.errno}")
while True:
    pid, status = os.wait()
    if pid == child:
        os.write(report, str(os.waitstatus_to_exitcode(status)).encode())
        os._exit(0)
"""


class ScopeError(RuntimeError):
    """The scope asked for (``PERFBOT_ROUND_SCOPE``) is unknown or not available on this machine."""


@dataclass(frozen=True)
class Strategy:
    """How commands are contained: ``name``; for a PID namespace the ``unshare`` command line, and
    whether its init can make folders read-only there (`Scope.popen`'s ``read_only``)."""

    name: str
    unshare: tuple[str, ...] = ()
    read_only: bool = False


def strategy() -> Strategy:
    """The strongest scope this machine allows, or the one ``PERFBOT_ROUND_SCOPE`` asks for."""
    return _strategy(os.environ.get(STRATEGY_VARIABLE, "auto") or "auto")


@functools.cache
def _strategy(asked: str) -> Strategy:
    if asked not in STRATEGIES:
        raise ScopeError(f"{STRATEGY_VARIABLE}={asked}: expected one of {', '.join(STRATEGIES)}")
    if not sys.platform.startswith("linux") or not _PROC.is_dir():
        if asked != "auto":
            raise ScopeError(f"{STRATEGY_VARIABLE}={asked}: needs Linux and /proc")
        return Strategy("session")
    if asked in ("auto", "pid-namespace"):
        fallback = None  # a namespace whose init cannot make folders read-only: only if none can
        for command in _unshare_commands():
            runs, read_only = _works(command)
            if runs and read_only:
                return Strategy("pid-namespace", command, read_only=True)
            if runs and fallback is None:
                fallback = Strategy("pid-namespace", command)
        if fallback is not None:
            return fallback
        if asked == "pid-namespace":
            raise ScopeError(
                f"{STRATEGY_VARIABLE}=pid-namespace: this machine refuses PID namespaces "
                f"(unshare --pid failed)"
            )
    return Strategy("processes")


def _unshare_commands() -> list[tuple[str, ...]]:
    """The ``unshare`` lines to try, best first. In a user namespace, ``--keep-caps`` lets the init
    keep the capabilities the namespace gives it, to mount; it drops them before the command runs."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    namespace = (unshare, "--pid", "--fork", "--kill-child", "--mount-proc")
    as_ourselves = (unshare, "--user", "--map-current-user", "--keep-caps", *namespace[1:])
    return [namespace, as_ourselves] if os.geteuid() == 0 else [as_ourselves]


# Run under the init with a folder made read-only: PID 1 is its parent, and it cannot write there.
_PROBE = (
    "import os, sys\n"
    "try:\n    open(os.path.join(sys.argv[1], 'probe'), 'w').close()\n    print(os.getppid(), 'rw')\n"
    "except OSError:\n    print(os.getppid(), 'ro')\n"
)


def _works(command: tuple[str, ...]) -> tuple[bool, bool]:
    """Whether a command runs under this ``unshare`` line as the namespace init's child, and whether
    that init can make a folder read-only there."""
    with tempfile.TemporaryDirectory(prefix="perfbot-scope-") as folder:
        for protect in ([folder], []):
            read, write = os.pipe()
            try:
                done = subprocess.run(
                    [
                        *command,
                        sys.executable,
                        "-I",
                        "-S",
                        "-c",
                        _INIT,
                        str(write),
                        "-",
                        json.dumps(protect),
                        sys.executable,
                        "-I",
                        "-S",
                        "-c",
                        _PROBE,
                        folder,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    stdin=subprocess.DEVNULL,
                    pass_fds=(write,),
                )
            except (OSError, subprocess.TimeoutExpired):
                return False, False
            finally:
                os.close(read)
                os.close(write)
            answer = done.stdout.split()
            if done.returncode == 0 and answer[:1] == ["1"]:
                return True, answer[1:] == ["ro"] and bool(protect)
    return False, False


@dataclass
class Scope:
    """One command's scope: start it with `popen`, end it with `end` (always, in a ``finally``)."""

    strategy: Strategy
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    process: subprocess.Popen | None = None
    _before: frozenset[tuple[int, int]] = frozenset()
    _report: int | None = None  # read end of the pipe on which a namespace's init says how the command ended
    _said: str | None = None
    _ended: bool = False

    def popen(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: dict[str, str],
        stdout: IO[bytes],
        stderr: IO[bytes],
        stdin: int = subprocess.DEVNULL,
        read_only: Sequence[Path] = (),
    ) -> subprocess.Popen:
        """Start ``argv`` in this scope: its own session, the scope's token in its environment;
        ``read_only``: folders it may read but not change, where the strategy can (`Strategy.read_only`)."""
        env = {**env, SCOPE_VARIABLE: self.token}
        _check_runnable(argv[0], cwd, env)
        self._before = frozenset(_children_of(os.getpid(), _table()))
        command, write = list(argv), None
        pass_fds: tuple[int, ...] = ()
        if self.strategy.name == "pid-namespace":
            self._report, write = os.pipe()
            pass_fds = (write,)
            lc_ctype = "-" if "LC_CTYPE" not in env else "=" + env["LC_CTYPE"]
            protect = [os.path.realpath(p) for p in read_only if self.strategy.read_only and os.path.isdir(p)]
            command = [
                *self.strategy.unshare,
                sys.executable,
                "-I",
                "-S",
                "-c",
                _INIT,
                str(write),
                lc_ctype,
                json.dumps(protect),
                *argv,
            ]
        if self.strategy.name != "session":
            _subreaper(True)
        try:
            self.process = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdout=stdout,
                stderr=stderr,
                stdin=stdin,
                start_new_session=True,
                pass_fds=pass_fds,
            )
            with _LIVE_LOCK:
                _LIVE[self.token] = self.process.pid
        except BaseException:
            if self.strategy.name != "session":
                _subreaper(False)
            if self._report is not None:
                os.close(self._report)
                self._report = None
            raise
        finally:
            if write is not None:
                os.close(write)
        return self.process

    def returncode(self) -> int:
        """How the command ended, as `subprocess` says it (negative: the signal that killed it);
        after `end`."""
        if self.process is None or self.process.returncode is None:
            raise RuntimeError("returncode() before the scope ended")
        if self._said is None:
            return self.process.returncode
        if self._said.startswith("spawn "):
            code = int(self._said.split()[1])
            raise OSError(code, os.strerror(code))
        if self._said.startswith(("mount ", "capset ")):  # the init could not fence the command in
            what, number, path = self._said.split(" ", 2)
            raise OSError(int(number), f"{os.strerror(int(number))} ({what} in the round's namespace)", path)
        try:
            return int(self._said)
        except ValueError:  # the init itself was killed: what unshare says is all there is
            return self.process.returncode

    def end(self) -> None:
        """End every process of the scope; the command itself first gets `GRACE_SECONDS` to stop.
        Ending it again does nothing."""
        if self._ended or self.process is None:
            return
        self._ended = True
        try:
            self._end()
        finally:
            with _LIVE_LOCK:
                _LIVE.pop(self.token, None)
            if self.strategy.name != "session":
                _subreaper(False)
            if self._report is not None:  # the init wrote before it exited; never wait for more
                os.set_blocking(self._report, False)
                with os.fdopen(self._report, "rb") as report:
                    self._report = None
                    try:
                        self._said = (report.read(4096) or b"").decode(errors="replace")
                    except BlockingIOError:
                        self._said = ""

    def _end(self) -> None:
        process = self.process
        if process is None:
            return
        if self.strategy.name == "session":
            _kill_group(process)
            return
        running = process.poll() is None
        members = self.members()
        _signal_all(members, signal.SIGTERM)
        if running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=GRACE_SECONDS)
        elif members:
            time.sleep(_LEFTOVER_GRACE)
        stopped: set[int] = set()
        for _ in range(_MAX_LOOKS):  # stop first, so that no member forks a new one between two looks
            new = self.members() - stopped
            if not new:
                break
            _signal_all(new, signal.SIGSTOP)
            stopped |= new
        _signal_all(stopped, signal.SIGKILL)
        process.wait()
        _reap(stopped - {process.pid})

    def members(self) -> set[int]:
        """The live processes of this scope now: see the module's docstring."""
        table = _table()
        own = os.getpid()
        roots: set[int] = set()
        if self.process is not None and self.process.pid in table:
            roots.add(self.process.pid)
        own_session = os.getsid(0)
        with _LIVE_LOCK:
            others = {token: pid for token, pid in _LIVE.items() if token != self.token}
        for child, started in _children_of(own, table):
            if (child, started) in self._before or table[child].session == own_session:
                continue
            if child not in others.values() and not _tokens_of(child) & others.keys():
                roots.add(child)
        roots |= {pid for pid in table if pid != own and _carries(pid, self.token)}
        return {pid for pid in _with_descendants(roots, table) if table[pid].state != "Z" and pid != own}


@dataclass(frozen=True)
class _Process:
    parent: int
    session: int
    state: str
    started: int


def _table() -> dict[int, _Process]:
    """Every process of /proc: parent, session, state and start time (``/proc/PID/stat``)."""
    table = {}
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) < 20:
            continue
        table[int(entry.name)] = _Process(int(fields[1]), int(fields[3]), fields[0].decode(), int(fields[19]))
    return table


def _children_of(parent: int, table: dict[int, _Process]) -> set[tuple[int, int]]:
    return {(pid, p.started) for pid, p in table.items() if p.parent == parent}


def _with_descendants(roots: Iterable[int], table: dict[int, _Process]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, p in table.items():
        children.setdefault(p.parent, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def _carries(pid: int, token: str) -> bool:
    """Whether a process's environment holds the scope's token (unreadable ones: not ours to end)."""
    return token in _tokens_of(pid)


def _tokens_of(pid: int) -> set[str]:
    """Every scope token in a process's environment (none where it cannot be read)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return set()
    prefix = f"{SCOPE_VARIABLE}=".encode()
    return {
        entry[len(prefix) :].decode(errors="replace")
        for entry in environ.split(b"\0")
        if entry.startswith(prefix)
    }


def _signal_all(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _reap(pids: set[int]) -> None:
    """Wait until killed members are gone, reaping those that became perfbot's children (orphans
    re-parented to it); a member that could not be killed (another user's) is left after a bound."""
    own, deadline = os.getpid(), time.monotonic() + _REAP_SECONDS
    left = set(pids)
    while left and time.monotonic() < deadline:
        table = _table()
        for pid in list(left):
            member = table.get(pid)
            if member is None:
                left.discard(pid)
            elif member.state == "Z" and member.parent == own:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
                left.discard(pid)
            elif member.state == "Z":
                left.discard(pid)  # its parent, a member too, is dead or dying: it reaps or is reaped
        if left:
            time.sleep(0.01)


def _kill_group(process: subprocess.Popen) -> None:
    """The process group only (``session``): SIGTERM, then SIGKILL after the grace."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            process.wait(timeout=GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            time.sleep(_LEFTOVER_GRACE)  # give the group's other members a moment before the KILL
    process.wait()


# The command of every scope started and not yet ended, by token: another scope's, not a member.
_LIVE: dict[str, int] = {}
_LIVE_LOCK = threading.Lock()
_SUBREAPING = [0]  # scopes alive now: a long-lived worker's scope outlives the rounds' around it
_SUBREAPING_LOCK = threading.Lock()


def _subreaper(on: bool) -> None:
    """Be the child subreaper while any scope is alive (the flag is the process's, not a scope's)."""
    with _SUBREAPING_LOCK:
        before = _SUBREAPING[0]
        _SUBREAPING[0] = max(0, before + (1 if on else -1))
        if (before > 0) == (_SUBREAPING[0] > 0):
            return
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
            code = ctypes.get_errno()
            raise ScopeError(f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(code)}")


def _check_runnable(program: str, cwd: Path, env: dict[str, str]) -> None:
    """Fail as `subprocess.Popen` would for a program that does not exist, before any wrapper runs."""
    if os.sep in program:
        path = cwd / program
        if not os.access(path, os.X_OK) or path.is_dir():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    elif shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


_PR_SET_DUMPABLE = 4


def hide_from_benchmarks() -> None:
    """Make perfbot's own process one that its benchmarks (the runner's user, not root) cannot trace
    or read: ``PR_SET_DUMPABLE`` 0 gives ``/proc/PID/environ``, ``fd/``, ``mem`` and ``ptrace`` to
    root only. Its command line stays readable by all, so it names no path a benchmark must not find.
    Every program perfbot starts is dumpable again (``execve`` resets it), as it would be elsewhere."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
