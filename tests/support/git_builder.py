"""Build small real git repositories for tests: commits from {path: content} dicts."""

from __future__ import annotations

import subprocess
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class GitBuilder:
    """A repository in ``root`` that tests grow commit by commit."""

    def __init__(self, root: Path, env: dict[str, str]):
        self.root = root
        self.env = env
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.root), *args], env=self.env, check=True, capture_output=True
        )
        return done.stdout.decode("utf-8", "replace").strip()

    def commit(self, subject: str, files: dict[str, str | bytes | None]) -> str:
        """Write (or, for None, delete) ``files`` and commit them; return the full sha."""
        for path, content in files.items():
            target = self.root / path
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", subject)
        return self.git("rev-parse", "HEAD")
