"""The local git repository adapter (GitPython): `GitRepo` runs every git command perfbot needs.

Ranges and their patches (one `git log -p` per range), revisions, files at a revision or in the
work tree, worktrees for benchmarking, and the facts the environment fingerprint records. Nothing
outside `bot.adapters` imports GitPython (an import-linter contract).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import git

from bot.core.config.source import ConfigSource
from bot.core.risk.diff import decode
from bot.core.risk.triage import Commit
from bot.errors import UserError

# Record and unit separators around the commit header fields.
_RECORD, _UNIT = "\x1e", "\x1f"
_FORMAT = f"--format={_RECORD}%H{_UNIT}%P{_UNIT}%an{_UNIT}%aI{_UNIT}%s"

# Hunk headers then name the enclosing def/class (Python) or function (C++/CUDA), which is what
# the risk rules about functions read. A repository's own .gitattributes still wins.
_ATTRIBUTES = "\n".join(
    [
        "*.py diff=python",
        "*.pyi diff=python",
        *(f"*.{ext} diff=cpp" for ext in ("c", "cc", "cpp", "cxx", "h", "hh", "hpp", "cu", "cuh")),
        "",
    ]
)


_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class RepoError(UserError, ValueError):
    """A repository or revision the user named that cannot be read."""


class GitRepo:
    """One local repository. Every git command perfbot runs goes through here; callers get shas,
    paths and text, never GitPython objects."""

    def __init__(self, repo: git.Repo):
        self._repo = repo

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> GitRepo:
        """The repository at ``path`` or a folder above it, or `RepoError`."""
        where = Path(path)
        if not where.exists():
            raise RepoError(f"{where}: no such directory")
        try:
            return cls(git.Repo(where, search_parent_directories=True))
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise RepoError(f"{where}: not a git repository") from None

    @property
    def bare(self) -> bool:
        return self._repo.bare

    @property
    def work_tree(self) -> Path | None:
        """The root of the work tree; None for a bare repository."""
        root = self._repo.working_tree_dir
        return Path(root) if root and not self._repo.bare else None

    @property
    def name(self) -> str:
        """The folder name of the work tree (of the git directory when bare)."""
        return (self.work_tree or Path(self._repo.git_dir)).name

    def _where(self) -> str:
        return str(self._repo.working_dir or self._repo.git_dir)

    def is_dirty(self, untracked_files: bool = False) -> bool:
        """Whether the work tree has uncommitted changes (untracked files count if asked)."""
        return self._repo.is_dirty(untracked_files=untracked_files)

    def resolve(self, revision: str) -> str:
        """The full sha of the commit ``revision`` names, or `RepoError`."""
        if not revision or revision.startswith("-"):
            raise RepoError(f"'{revision}': not a revision")
        try:
            sha: str = self._repo.git.rev_parse(
                "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"
            )
        except git.GitCommandError:
            raise RepoError(f"unknown revision '{revision}' in {self._where()}") from None
        return sha

    def count_range(self, base: str, head: str) -> tuple[str, str, int]:
        """Resolve both ends and count the commits of ``base..head``; an empty range is an error."""
        base_sha, head_sha = self.resolve(base), self.resolve(head)
        count = int(self._repo.git.rev_list("--count", f"{base_sha}..{head_sha}", "--"))
        if count == 0:
            raise RepoError(f"range {base}..{head} has no commits ({head} is already in {base})")
        return base_sha, head_sha, count

    def rev_list(self, base_sha: str, head_sha: str) -> list[str]:
        """The commits of ``base_sha..head_sha``, oldest first, every parent before its children."""
        listed = self._repo.git.rev_list("--topo-order", f"{base_sha}..{head_sha}", "--").split()
        return list(reversed(listed))

    def existing_paths(self, sha: str, candidates: Iterable[str]) -> list[str]:
        """Which of the ``candidates`` (files or folders ending in '/') exist in commit ``sha``."""
        candidates = list(candidates)
        wanted = [c.rstrip("/") for c in candidates]
        found = set(self._repo.git.ls_tree("--name-only", sha, "--", *wanted).splitlines())
        return [c for c in candidates if c.rstrip("/") in found]

    def range_patches(self, base_sha: str, head_sha: str) -> Iterator[Commit]:
        """Every commit reachable from ``head_sha`` and not from ``base_sha``, newest first, with its
        patch, from one `git log -p`, yielded while git is still writing, so that the caller's
        parsing overlaps git's diffing."""
        with _attributes_file() as attributes:
            process = self._repo.git.execute(
                [
                    "git",
                    "-c",
                    "core.quotePath=false",
                    "-c",
                    f"core.attributesFile={attributes}",
                    "log",
                    _FORMAT,
                    "-p",
                    "-M",
                    "--no-color",
                    "--no-ext-diff",
                    "--no-textconv",
                    f"{base_sha}..{head_sha}",
                    "--",
                ],
                as_process=True,
            )
            _widen_pipe(process.stdout)
            try:
                # read1: take what git has written so far instead of waiting for a full megabyte,
                # so that git keeps diffing while the caller parses.
                yield from parse_log(iter(lambda: process.stdout.read1(1 << 20), b""))
            finally:
                process.stdout.close()
                process.wait()

    def show(self, revision: str, path: str) -> str | None:
        """The text of ``path`` as committed at ``revision``; None when that commit has no such file."""
        try:
            data = self._repo.git.execute(
                ["git", "cat-file", "blob", f"{revision}:{path}"],
                stdout_as_string=False,
                strip_newline_in_stdout=False,
            )
        except git.GitCommandError:
            return None
        return data.decode("utf-8", errors="replace")

    def read_file(self, path: str) -> str | None:
        """A file of the work tree, or None (bare repository, missing file, or a path that leads
        outside the work tree: a diff names its paths, and a diff can come from anyone)."""
        root = self.work_tree
        if root is None or not path or Path(path).is_absolute() or ".." in Path(path).parts:
            return None
        target = root / path
        try:
            inside = target.resolve().is_relative_to(root.resolve())
        except (OSError, RuntimeError):  # a symlink loop
            return None
        return target.read_text(errors="replace") if inside and target.is_file() else None

    def config_text(self, source: ConfigSource) -> str | None:
        """The repository config's text where ``source`` says (the work tree or a commit), or None
        when there is none there."""
        if source.where == "work-tree":
            return self.read_file(source.path)
        if source.where == "revision" and source.revision:
            return self.show(source.revision, source.path)
        raise ValueError(f"{source.label}: not in a local repository")

    def add_worktree(self, path: Path, sha: str) -> None:
        """Check ``sha`` out, detached, in a new work tree at ``path``."""
        self._repo.git.worktree("add", "--detach", "--force", str(path), sha)

    def remove_worktree(self, path: Path) -> None:
        """Remove a work tree made by `add_worktree`; one git cannot remove is deleted from disk
        (`prune_worktrees` then forgets it)."""
        try:
            self._repo.git.worktree("remove", "--force", str(path))
        except git.GitCommandError:
            shutil.rmtree(path, ignore_errors=True)

    def prune_worktrees(self) -> None:
        """Forget work trees whose folders are gone; best effort."""
        with contextlib.suppress(git.GitCommandError):
            self._repo.git.worktree("prune")

    def head_sha(self) -> str | None:
        """The commit the checkout is on; None before the first commit."""
        try:
            return self._repo.head.commit.hexsha
        except (ValueError, git.GitCommandError):
            return None

    def reflog(self, count: int) -> list[str] | None:
        """The last ``count`` reflog entries of HEAD (short sha, selector, what moved it); None
        when there is no reflog to read."""
        try:
            entries: str = self._repo.git.reflog("-n", str(count), "--format=%h %gd %gs")
        except git.GitCommandError:
            return None
        return entries.splitlines()


def split_range(text: str) -> tuple[str, str]:
    """``BASE..HEAD`` (HEAD defaults to ``HEAD``) into its two ends."""
    if "..." in text or text.count("..") != 1:
        raise RepoError(f"'{text}': expected a range BASE..HEAD")
    base, head = text.split("..")
    if not base:
        raise RepoError(f"'{text}': the range needs a BASE before '..'")
    return base, head or "HEAD"


def _widen_pipe(stream: IO[bytes]) -> None:
    """Let git run up to 1 MiB ahead of the reader (Linux pipes hold 64 KiB by default)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        fcntl.fcntl(stream.fileno(), _F_SETPIPE_SZ, 1 << 20)


def parse_log(chunks: Iterable[bytes]) -> Iterator[Commit]:
    """Split `git log -p` output made with ``_FORMAT``, arriving in chunks, into commits."""
    # A record starts a line; diff body lines never start with the separator (they carry a
    # one-character prefix), so file contents cannot split a commit.
    separator = b"\n" + _RECORD.encode()
    buffer = bytearray(b"\n")
    start: int | None = None  # where the record being read begins (at its separator)
    scan = 0
    for chunk in chunks:
        buffer += chunk
        while (at := buffer.find(separator, scan)) >= 0:
            if start is not None:
                yield _commit(bytes(buffer[start + len(separator) : at]))
            start, scan = at, at + len(separator)
        scan = max(scan, len(buffer) - len(separator) + 1)
        if start:  # drop what was read, so one huge commit is never copied twice
            del buffer[:start]
            scan, start = scan - start, 0
    if start is not None:
        yield _commit(bytes(buffer[start + len(separator) :]))


def _commit(record: bytes) -> Commit:
    header, _, body = record.partition(b"\n")
    sha, parents, author, date, subject = decode(header).split(_UNIT, 4)
    return Commit(sha, tuple(parents.split()), author, date, subject, decode(body))


@contextmanager
def _attributes_file() -> Iterator[str]:
    with tempfile.NamedTemporaryFile("w", prefix="perfbot-attrs-", suffix=".txt") as handle:
        handle.write(_ATTRIBUTES)
        handle.flush()
        yield handle.name
