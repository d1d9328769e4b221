"""Detached git worktrees of the revisions under test, in one temporary folder removed afterwards."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import TracebackType

from bot.adapters.git_repo import GitRepo


class Worktrees:
    """Worktrees under one temporary folder, every one removed when the ``with`` block ends.

    The folder (`root`) also has room for what a run writes beside its checkouts (round outputs,
    set-up logs). Each `add` makes its own worktree, even when two name the same commit (A/A).
    """

    def __init__(self, repo: GitRepo, parent: Path | None = None):
        self.repo, self.parent = repo, parent
        self.root = Path()
        self._made: list[Path] = []

    def __enter__(self) -> Worktrees:
        self.root = Path(tempfile.mkdtemp(prefix="perfbot-worktrees-", dir=self.parent))
        return self

    def add(self, name: str, sha: str) -> Path:
        """A new detached worktree of ``sha`` at ``root/name``."""
        path = self.root / name
        self.repo.add_worktree(path, sha)
        self._made.append(path)
        return path

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        for path in self._made:
            self.repo.remove_worktree(path)
        self.repo.prune_worktrees()
        shutil.rmtree(self.root, ignore_errors=True)
