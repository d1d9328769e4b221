"""Read commit ranges from a local git repository (GitPython), one `git log -p` per range."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import git

from bot.core.diff import decode
from bot.core.triage import Commit

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


class RepoError(ValueError):
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


def range_patches(repo: git.Repo, base: str, head: str) -> list[Commit]:
    """Every commit reachable from ``head`` and not from ``base``, newest first, with its patch."""
    base_sha, head_sha = resolve(repo, base), resolve(repo, head)
    with _attributes_file() as attributes:
        raw = repo.git.execute(
            ["git", "-c", "core.quotePath=false", "-c", f"core.attributesFile={attributes}",
             "log", _FORMAT, "-p", "-M", "--no-color", "--no-ext-diff", "--no-textconv",
             f"{base_sha}..{head_sha}", "--"],
            stdout_as_string=False,
        )
    commits = list(parse_log(raw))
    if not commits:
        raise RepoError(f"range {base}..{head} has no commits ({head} is already in {base})")
    return commits


def parse_log(raw: bytes) -> Iterator[Commit]:
    """Split `git log -p` output made with ``_FORMAT`` into commits."""
    # A record starts a line; diff body lines never start with the separator (they carry a
    # one-character prefix), so file contents cannot split a commit.
    for record in (b"\n" + raw).split(b"\n" + _RECORD.encode())[1:]:
        header, _, body = record.partition(b"\n")
        sha, parents, author, date, subject = decode(header).split(_UNIT, 4)
        yield Commit(sha, tuple(parents.split()), author, date, subject, decode(body))


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
