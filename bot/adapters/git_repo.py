"""Read commit ranges from a local git repository (GitPython), one `git log -p` per range."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import git

from bot.core.risk.diff import decode
from bot.core.risk.triage import Commit
from bot.errors import UserError

# Record and unit separators around the commit header fields.
_RECORD, _UNIT = "\x1e", "\x1f"
_FORMAT = f"--format={_RECORD}%H{_UNIT}%P{_UNIT}%an{_UNIT}%aI{_UNIT}%s"

# Hunk headers then name the enclosing def/class (Python) or function (C++/CUDA), which is what
# the risk rules about functions read. A repository's own .gitattributes still wins.
_ATTRIBUTES = "\n".join([
    "*.py diff=python", "*.pyi diff=python",
    *(f"*.{ext} diff=cpp" for ext in ("c", "cc", "cpp", "cxx", "h", "hh", "hpp", "cu", "cuh")),
    "",
])


_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class RepoError(UserError, ValueError):
    """A repository or revision the user named that cannot be read."""


def open_repo(path: str | os.PathLike) -> git.Repo:
    where = Path(path)
    if not where.exists():
        raise RepoError(f"{where}: no such directory")
    try:
        return git.Repo(where, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise RepoError(f"{where}: not a git repository") from None


def resolve(repo: git.Repo, revision: str) -> str:
    """The full sha of the commit ``revision`` names, or `RepoError`."""
    if not revision or revision.startswith("-"):
        raise RepoError(f"'{revision}': not a revision")
    try:
        return repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    except git.GitCommandError:
        raise RepoError(f"unknown revision '{revision}' in {repo.working_dir or repo.git_dir}") from None


def split_range(text: str) -> tuple[str, str]:
    """``BASE..HEAD`` (HEAD defaults to ``HEAD``) into its two ends."""
    if "..." in text or text.count("..") != 1:
        raise RepoError(f"'{text}': expected a range BASE..HEAD")
    base, head = text.split("..")
    if not base:
        raise RepoError(f"'{text}': the range needs a BASE before '..'")
    return base, head or "HEAD"


def count_range(repo: git.Repo, base: str, head: str) -> tuple[str, str, int]:
    """Resolve both ends and count the commits of ``base..head``; an empty range is an error."""
    base_sha, head_sha = resolve(repo, base), resolve(repo, head)
    count = int(repo.git.rev_list("--count", f"{base_sha}..{head_sha}", "--"))
    if count == 0:
        raise RepoError(f"range {base}..{head} has no commits ({head} is already in {base})")
    return base_sha, head_sha, count


def existing_paths(repo: git.Repo, sha: str, candidates: Iterable[str]) -> list[str]:
    """Which of the ``candidates`` (files or folders ending in '/') exist in commit ``sha``."""
    wanted = [c.rstrip("/") for c in candidates]
    found = set(repo.git.ls_tree("--name-only", sha, "--", *wanted).splitlines())
    return [c for c in candidates if c.rstrip("/") in found]


def range_patches(repo: git.Repo, base_sha: str, head_sha: str) -> Iterator[Commit]:
    """Every commit reachable from ``head_sha`` and not from ``base_sha``, newest first, with its
    patch, from one `git log -p`, yielded while git is still writing, so that the caller's
    parsing overlaps git's diffing."""
    with _attributes_file() as attributes:
        process = repo.git.execute(
            ["git", "-c", "core.quotePath=false", "-c", f"core.attributesFile={attributes}",
             "log", _FORMAT, "-p", "-M", "--no-color", "--no-ext-diff", "--no-textconv",
             f"{base_sha}..{head_sha}", "--"],
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


def _widen_pipe(stream) -> None:
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
                yield _commit(bytes(buffer[start + len(separator):at]))
            start, scan = at, at + len(separator)
        scan = max(scan, len(buffer) - len(separator) + 1)
        if start:  # drop what was read, so one huge commit is never copied twice
            del buffer[:start]
            scan, start = scan - start, 0
    if start is not None:
        yield _commit(bytes(buffer[start + len(separator):]))


def _commit(record: bytes) -> Commit:
    header, _, body = record.partition(b"\n")
    sha, parents, author, date, subject = decode(header).split(_UNIT, 4)
    return Commit(sha, tuple(parents.split()), author, date, subject, decode(body))


def read_file(repo: git.Repo, path: str) -> str | None:
    """A file of the working tree, or None (bare repository, missing file)."""
    if repo.bare or not repo.working_tree_dir:
        return None
    target = Path(repo.working_tree_dir, path)
    return target.read_text(errors="replace") if target.is_file() else None


@contextmanager
def _attributes_file() -> Iterator[str]:
    with tempfile.NamedTemporaryFile("w", prefix="perfbot-attrs-", suffix=".txt") as handle:
        handle.write(_ATTRIBUTES)
        handle.flush()
        yield handle.name
