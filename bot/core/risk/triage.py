"""Rank the commits of a range by risk: the pure part of `perfbot triage`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypedDict

from bot.core.risk import diff as diffs
from bot.core.risk import ruleset
from bot.core.risk import scoring as risk
from bot.core.risk.stepmap_scoring import MapEvidence


class FileStatDict(TypedDict):
    """A changed file of a ranked commit, as JSON (`perfbot triage --format json`)."""

    path: str
    old_path: str | None
    status: str
    added: int
    removed: int
    binary: bool
    score: int
    cold: str | None


class RankedCommitDict(TypedDict):
    """A `RankedCommit` as JSON."""

    sha: str
    subject: str
    author: str
    date: str
    merge: bool
    score: int
    level: str
    reasons: list[str]
    files: list[FileStatDict]
    warnings: list[str]


class TriageDict(TypedDict):
    """A `Triage` as JSON."""

    range: str
    profile: str
    total: int
    commits: list[RankedCommitDict]


@dataclass(frozen=True, slots=True)
class Commit:
    """What triage needs of a commit: identity, subject and its patch against its parent."""

    sha: str
    parents: tuple[str, ...]
    author: str
    date: str
    subject: str
    diff: str


@dataclass(slots=True)
class RankedCommit:
    commit: Commit
    report: risk.RiskReport

    @property
    def is_merge(self) -> bool:
        return len(self.commit.parents) > 1

    def to_dict(self) -> RankedCommitDict:
        c, r = self.commit, self.report
        return {
            "sha": c.sha,
            "subject": c.subject,
            "author": c.author,
            "date": c.date,
            "merge": self.is_merge,
            "score": r.score,
            "level": r.level,
            "reasons": r.reasons,
            "files": [_stat(f) for f in r.files],
            "warnings": r.warnings,
        }


@dataclass(slots=True)
class Triage:
    range: str
    profile: str
    commits: list[RankedCommit]
    total: int | None = None  # commits in the range when ``commits`` holds only the top ones

    @property
    def ranked(self) -> int:
        """How many commits of the range were scored (all of them, whatever is shown)."""
        return self.total if self.total is not None else len(self.commits)

    def top(self, limit: int) -> Triage:
        """The ``limit`` most suspicious commits, still counting the whole range."""
        return Triage(self.range, self.profile, self.commits[: max(limit, 0)], self.ranked)

    def to_dict(self) -> TriageDict:
        return {
            "range": self.range,
            "profile": self.profile,
            "total": self.ranked,
            "commits": [c.to_dict() for c in self.commits],
        }


def rank(
    commits: Iterable[Commit],
    rules: ruleset.RuleSet,
    range_text: str,
    progress: Callable[[int], None] | None = None,
    step_map: MapEvidence | None = None,
) -> Triage:
    """Score every commit and sort them most suspicious first (`order`: ties are broken by the
    evidence, then by sha, whatever order the commits came in), with what ``step_map`` says a step
    runs when it is given.

    ``commits`` may be a stream: each is scored as it arrives, while git writes the next.
    """
    ranked = []
    for commit in commits:
        item = RankedCommit(commit, risk.score(diffs.parse(commit.diff), rules, step_map=step_map))
        if item.is_merge and not item.report.files:
            item.report.notes.append("merge commit: its changes are scored on the merged commits")
        ranked.append(item)
        if progress:
            progress(len(ranked))
    ranked.sort(key=order)
    return Triage(range_text, rules.profile, ranked)


def order(item: RankedCommit) -> tuple[int, float, int, str]:
    """The sort key of a ranked commit: its score, then among equal scores the commit with the
    strongest single signal (at its rule's full weight), then the one with more changed lines of
    code, then the sha, so that a ranking never depends on the order git listed the commits in."""
    report = item.report
    strongest = max(
        (s.full_weight if s.full_weight is not None else s.weight for s in report.signals), default=0.0
    )
    code_lines = sum(f.code_lines for f in report.files)
    return -report.score, -strongest, -code_lines, item.commit.sha


def _stat(file: risk.FileRisk) -> FileStatDict:
    return {
        "path": file.path,
        "old_path": file.old_path,
        "status": file.status,
        "added": file.added,
        "removed": file.removed,
        "binary": file.is_binary,
        "score": file.score,
        "cold": file.cold,
    }
