"""Detached git worktrees of the revisions under test (GitPython), removed again afterwards."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import git


@contextmanager
def checked_out(repo: git.Repo, revisions: dict[str, str],
                parent: Path | None = None) -> Iterator[dict[str, Path]]:
    """One worktree per side (``{"base": sha, ...}``), even when two sides name the same commit."""
    root = Path(tempfile.mkdtemp(prefix="perfbot-worktrees-", dir=parent))
    made: list[Path] = []
    try:
        paths = {}
        for side, sha in revisions.items():
            path = root / side
            repo.git.worktree("add", "--detach", "--force", str(path), sha)
            made.append(path)
            paths[side] = path
        yield paths
    finally:
        for path in made:
            try:
                repo.git.worktree("remove", "--force", str(path))
            except git.GitCommandError:
                shutil.rmtree(path, ignore_errors=True)
        with suppress(git.GitCommandError):
            repo.git.worktree("prune")
        shutil.rmtree(root, ignore_errors=True)
