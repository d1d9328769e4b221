"""A pull request as GitHub's API describes it now: what every decision about a pull request reads
(never what a comment or an older event says)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class PullInfo:
    repo: str
    number: int
    open: bool
    draft: bool
    head_sha: str
    base_sha: str
    head_repo: str | None  # None when the fork was deleted
    author: str
    html_url: str

    @property
    def fork(self) -> bool:
        return self.head_repo != self.repo
