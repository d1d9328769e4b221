"""The code each side runs is its own: no process of the other side changed it between its rounds.

Base and head are two worktrees side by side, and both sides' processes run as the same user with
the same engine's interpreter. A head that rewrites the base's worktree during its own round (a
source file, a forged ``__pycache__/*.pyc`` whose header matches the source's mtime and size, a
module that shadows another) or plants a start-up hook in the engine's site-packages (a ``.pth``, a
``sitecustomize``) would make every later base round run its code, and choose the verdict.

Two defences (docs/security.md, "Result integrity"):

- where a round runs in a mount namespace (`bot.runner.scope`), the other side's worktree,
  perfbot's own files and the engine's import path are read-only to it (`Guard.round_fence`; a
  set-up, which may install into the engine, gets `Guard.fence`, without the import path);
- everywhere, a `Guard` takes a manifest of each side's tree (every entry, ignored files included:
  path, type and mode, size, mtime, ctime, inode) when that side's round ends, and checks it when its
  next round starts; and it watches the engine's import path (`import_path`), shared by both sides,
  after the set-up and at the end, and before every round too where the rounds cannot be kept from
  writing it (`Guard.shared_fenced` false). Any change is `TreeChanged`: the run ends with no verdict.

A side's own round may change its own tree (its ``__pycache__``, build outputs): the manifest is
taken again after it. In the engine's import path the only change accepted is what Python itself
writes there for an engine installed without bytecode (uv's default): a new ``__pycache__`` folder
and new files in one. Everything else, added, removed or changed, is tampering; so is a folder
whose entries changed and came back (its mtime tells).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import bot

# mode (type and permissions), size, mtime_ns, ctime_ns, inode: what changes when a file is
# written, replaced, renamed over, chmod-ed or touched back (ctime cannot be set back).
Entry = tuple[int, int, int, int, int]
Manifest = dict[str, Entry]  # path relative to the root ("" is the root itself) -> Entry

PYCACHE = "__pycache__"
# Not walked inside a watched folder unless watched itself: an interpreter's own site-packages
# under its standard library, which a virtual environment does not import.
_OTHER_ENVIRONMENTS = frozenset({"site-packages", "dist-packages"})
_PROBE_TIMEOUT = 60
# The engine's import path, as its processes start with the rounds' environment: every folder
# on ``sys.path`` (the probe's own folder left out), the install schemes' folders, and the user's
# site-packages even where it does not exist yet (creating it is enough to plant a hook).
_PATH_PROBE = r"""
import json, site, sys, sysconfig
paths = sys.path[1:] + [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")]
print(json.dumps({"path": paths, "user": site.getusersitepackages() if site.ENABLE_USER_SITE else None}))
"""


class TreeChanged(RuntimeError):
    """A side's tree, or the engine's import path, changed while the other side's code ran."""


def manifest(root: Path, skip_names: Iterable[str] = (), skip_paths: Iterable[str] = ()) -> Manifest:
    """Every entry under ``root`` (not following symbolic links), ``root`` included; empty when
    ``root`` does not exist. Sub-folders named in ``skip_names`` or at ``skip_paths`` are left out,
    with everything in them.

    The walk is GNU find's where it is there (`_found`: the same entries, read in C, four to five
    times faster over an engine's site-packages, which is walked before every round); where find is
    missing or does not finish cleanly (an entry that vanished, a folder it cannot read), Python's."""
    return walk(root, skip_names, skip_paths).manifest


@dataclass(frozen=True)
class Walk:
    """One walk of a folder (`walk`): its manifest and, where GNU find read it, the folder's own
    entry and find's output as it came (``listing``: every entry's type, mode, size, times, inode
    and path, so that two equal listings are two equal manifests)."""

    manifest: Manifest
    listing: tuple[Entry, bytes] | None = None


def walk(
    root: Path, skip_names: Iterable[str] = (), skip_paths: Iterable[str] = (), since: Walk | None = None
) -> Walk:
    """`manifest`'s walk of ``root``, with find's listing where find read it. ``since``: an earlier
    walk of the same folder; where find's listing is the same byte for byte, that walk is returned
    as it is and nothing is parsed (an engine's site-packages is tens of thousands of entries, and
    parsing them took most of a walk, on the run's critical path at its start and its end)."""
    names, paths = frozenset(skip_names), frozenset(skip_paths)
    try:
        top = root.lstat()
    except FileNotFoundError:
        return Walk({})
    found: Manifest = {"": _entry(top)}
    if not stat.S_ISDIR(top.st_mode):
        return Walk(found)
    listed = _listing(root, names, paths)
    if listed is not None:
        listing = (found[""], listed)
        if since is not None and since.listing == listing:
            return since
        parsed = _parsed(listed)
        if parsed is not None:
            found.update(parsed)
            return Walk(found, listing)
    found.update(_walked(root, names, paths))
    return Walk(found)


def _walked(root: Path, names: frozenset[str], paths: frozenset[str]) -> Manifest:
    """The entries under ``root`` (``root`` itself left out) as `manifest` takes them, read by
    Python."""
    found: Manifest = {}
    pending = [(str(root), "")]
    while pending:
        folder, relative = pending.pop()
        try:
            entries = os.scandir(folder)
        except OSError:  # vanished, or unreadable: its own entry says what can be said
            continue
        with entries:
            for item in entries:
                name = f"{relative}/{item.name}" if relative else item.name
                try:
                    info = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    if item.name in names or item.path in paths:
                        continue
                    pending.append((item.path, name))
                found[name] = _entry(info)
    return found


def _entry(info: os.stat_result) -> Entry:
    return info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino


# find's one-letter file types (%y), as the type bits of st_mode.
_TYPES = {
    "f": stat.S_IFREG,
    "d": stat.S_IFDIR,
    "l": stat.S_IFLNK,
    "p": stat.S_IFIFO,
    "s": stat.S_IFSOCK,
    "c": stat.S_IFCHR,
    "b": stat.S_IFBLK,
}
_FIND_TIMEOUT = 120


def _found(root: Path, names: frozenset[str], paths: frozenset[str]) -> Manifest | None:
    """The entries under ``root`` (``root`` itself left out) as `manifest` takes them, read by GNU
    find: None where find is not GNU's, fails, or prints what this cannot read."""
    listed = _listing(root, names, paths)
    return _parsed(listed) if listed is not None else None


def _listing(root: Path, names: frozenset[str], paths: frozenset[str]) -> bytes | None:
    """What GNU find prints for the entries under ``root`` (`_parsed` reads it); None where it is
    not there or did not finish cleanly."""
    prune = [arg for name in sorted(names) for arg in ("-o", "-name", _glob(name))]
    prune += [arg for path in sorted(paths) for arg in ("-o", "-path", _glob(path))]
    test = ["-type", "d", "(", *prune[1:], ")", "-prune", "-o"] if prune else []
    argv = ["find", str(root), "-mindepth", "1", *test, "-printf", "%y %m %s %T@ %C@ %i %P\\0"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=_FIND_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _parsed(listed: bytes) -> Manifest | None:
    """find's listing (`_listing`) as a manifest; None where it holds what this cannot read."""
    found: Manifest = {}
    try:
        for record in listed.split(b"\0")[:-1]:
            kind, mode, size, mtime, ctime, inode, path = record.split(b" ", 6)
            found[os.fsdecode(path)] = (
                _TYPES[kind.decode()] | int(mode, 8),
                int(size),
                _ns(mtime),
                _ns(ctime),
                int(inode),
            )
    except (ValueError, KeyError):
        return None
    return found


def _ns(text: bytes) -> int:
    """``1796533105.2947547040`` (find's %T@) in nanoseconds, exactly."""
    seconds, _, fraction = text.decode().partition(".")
    if not seconds.isdigit() or not (fraction.isdigit() or not fraction):
        raise ValueError(text)
    return int(seconds) * 1_000_000_000 + int(fraction[:9].ljust(9, "0"))


def _glob(text: str) -> str:
    """``text`` as a find pattern that matches it alone (its wildcards escaped)."""
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def changes(
    before: Mapping[str, Entry], after: Mapping[str, Entry], *, python_writes: bool = False
) -> list[str]:
    """What differs between two manifests, one line per path (``added work.py``, ``removed …``,
    ``changed …``): what was added or removed first, then changed files, then folders whose
    entries changed, each by path. ``python_writes``: accept what an interpreter writes on import
    (new ``__pycache__`` folders and new files in them, and the new mtime of the folders that got
    them)."""
    found = []
    for path in before.keys() | after.keys():
        old, new = before.get(path), after.get(path)
        shown = path or "."
        if old is None:
            if not (python_writes and _bytecode(path)):
                found.append((0, path, f"added {shown}"))
        elif new is None:
            found.append((0, path, f"removed {shown}"))
        elif old != new and not (python_writes and _got_bytecode(path, old, new, before, after)):
            found.append((2 if stat.S_ISDIR(new[0]) else 1, path, f"changed {shown}"))
    return [line for _, _, line in sorted(found)]


def _bytecode(path: str) -> bool:
    """A ``__pycache__`` folder, or a file in one."""
    parts = path.split("/")
    return parts[-1] == PYCACHE or (len(parts) > 1 and parts[-2] == PYCACHE)


def _got_bytecode(
    path: str, old: Entry, new: Entry, before: Mapping[str, Entry], after: Mapping[str, Entry]
) -> bool:
    """The same folder (type, mode, inode), changed only because Python wrote bytecode into it: a
    ``__pycache__`` folder, or one that has a new ``__pycache__``."""
    if not stat.S_ISDIR(new[0]) or (old[0], old[4]) != (new[0], new[4]):
        return False
    if path.rpartition("/")[2] == PYCACHE:
        return True
    cache = f"{path}/{PYCACHE}" if path else PYCACHE
    return cache in after and cache not in before


def summary(found: Sequence[str]) -> str:
    """The first change, and how many more."""
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{found[0]}{more}"


@dataclass
class Guard:
    """What one run keeps each side from changing: the other side's worktree and ``fences``
    (perfbot's own files), read-only where a round's scope can (`fence`); each side's tree as its
    last round left it, and the engine's import path (``shared``) as the last check saw it."""

    trees: Mapping[str, Path]
    shared: Sequence[Path] = ()
    fences: Sequence[Path] = ()
    sealed: dict[str, Manifest] = field(default_factory=dict)
    watched: dict[Path, Walk] = field(default_factory=dict)
    last: str | None = None  # the side whose processes ran last
    # The rounds' scope makes what `round_fence` names read-only (`scope.Strategy.read_only`): no
    # round can write the import path, so it is walked after the set-up and at the end only.
    shared_fenced: bool = False
    unfenced: list[Path] = field(default_factory=list)  # folders of ``shared`` not made read-only

    def fence(self, side: str) -> tuple[Path, ...]:
        """What a process of ``side`` gets read-only where its scope can: the other side's worktree
        and the fences, less any folder that holds ``side``'s own worktree."""
        return self._fenced(side, self.fences)

    def round_fence(self, side: str) -> tuple[Path, ...]:
        """What a round, warm-up, worker or profiled pass of ``side`` gets read-only: `fence`, and
        the engine's import path where `shared_fenced` (a set-up may install into it; a round may not)."""
        return self._fenced(side, [*self.fences, *self.shared] if self.shared_fenced else self.fences)

    def _fenced(self, side: str, fences: Sequence[Path]) -> tuple[Path, ...]:
        own = Path(os.path.realpath(self.trees[side]))
        others = [Path(os.path.realpath(tree)) for name, tree in self.trees.items() if name != side]
        return tuple(outermost([*others, *(p for p in fences if not _within(own, p))]))

    def seal(self, side: str) -> None:
        """``side``'s processes are done for now: what its tree holds is its own."""
        self.sealed[side] = manifest(self.trees[side])
        self.last = side

    def check(self, side: str) -> None:
        """Before a round of ``side``: its tree is as its last round left it, and the engine's
        import path as the last check saw it where a round could have written it; else `TreeChanged`."""
        self.check_tree(side)
        self.check_shared(self.shared if not self.shared_fenced else self.unfenced)

    def check_tree(self, side: str) -> None:
        """``side``'s tree is as its last round (or set-up) left it; else `TreeChanged`."""
        if side in self.sealed:
            found = changes(self.sealed[side], manifest(self.trees[side]))
            if found:
                after = f", after a round of {self.last}" if self.last and self.last != side else ""
                raise TreeChanged(
                    f"the {side} worktree changed between its rounds{after}: {summary(found)} "
                    f"(in {self.trees[side]}); no round of this run is trusted"
                )

    def seal_shared(self) -> None:
        """What the engine's import path holds now is the reference (after a set-up, which may
        install into it). A folder of it that does not exist yet (the user's site-packages, say)
        cannot be made read-only: `check` walks those before every round, whatever the scope."""
        self.watched = {root: self._walk(root) for root in self.shared}
        self.unfenced = [root for root in self.shared if not root.is_dir()]

    def check_shared(self, roots: Sequence[Path] | None = None) -> None:
        """The engine's import path (or those of its folders in ``roots``) changed only as Python
        changes it; then what it holds now, bytecode included, is the reference."""
        for root in self.shared if roots is None else roots:
            before = self.watched.get(root)
            now = self._walk(root, before)
            found = (
                changes(before.manifest, now.manifest, python_writes=True)
                if before is not None and now is not before
                else []
            )
            if found:
                after = f" after a round of {self.last}" if self.last else ""
                raise TreeChanged(
                    f"the engine's import path changed{after}: {summary(found)} (in {root}); "
                    f"no round of this run is trusted"
                )
            self.watched[root] = now

    def _walk(self, root: Path, since: Walk | None = None) -> Walk:
        """One watched folder, less the watched folders inside it (walked on their own); ``since``
        itself where find lists the same as it did (`walk`)."""
        inside = [str(other) for other in self.shared if other != root and _within(other, root)]
        return walk(root, _OTHER_ENVIRONMENTS, inside, since)


def import_path(python: str, env: Mapping[str, str], trees: Iterable[Path]) -> list[Path]:
    """The folders the engine's interpreter imports from with the rounds' environment, without any
    that holds or is inside a worktree (each side's own is checked on its own); none where the
    interpreter does not answer."""
    with tempfile.TemporaryDirectory(prefix="perfbot-probe-") as empty:
        try:
            done = subprocess.run(
                [python, "-c", _PATH_PROBE],
                capture_output=True,
                text=True,
                cwd=empty,
                env=dict(env),
                timeout=_PROBE_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
            answer = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {}
        except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
            answer = {}
    if not isinstance(answer, dict):
        return []
    listed = [p for p in answer.get("path") or [] if isinstance(p, str) and os.path.isabs(p)]
    found = [Path(os.path.realpath(p)) for p in listed if os.path.isdir(p)]
    user = answer.get("user")
    if isinstance(user, str) and os.path.isabs(user):
        found.append(Path(os.path.realpath(user)))  # watched even before it exists
    kept = [Path(os.path.realpath(tree)) for tree in trees]
    return sorted({p for p in found if not any(_within(p, tree) or _within(tree, p) for tree in kept)})


def outermost(paths: Iterable[Path]) -> list[Path]:
    """``paths`` without duplicates or any inside another of them."""
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in unique:
        if not any(_within(path, outer) for outer in kept):
            kept.append(path)
    return sorted(kept)


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def perfbot_files(engine: Iterable[Path]) -> list[Path]:
    """perfbot's own package and environment, less what the engine imports from (a perfbot
    installed into the engine's own environment leaves that environment writable)."""
    package = Path(os.path.realpath(Path(bot.__file__).parent))
    prefix = Path(os.path.realpath(sys.prefix))
    shared = list(engine)
    own = [package]
    if not any(_within(path, prefix) for path in shared):
        own.append(prefix)
    return outermost(own)


def holds(folder: Path, paths: Iterable[Path]) -> bool:
    """Whether ``folder`` is or holds one of ``paths``."""
    real = Path(os.path.realpath(folder))
    return any(_within(Path(os.path.realpath(path)), real) for path in paths)
