"""What a `pull_request` event does to the pull request's benchmarks, decided without I/O from the
facts the service gathered: a push supersedes the runs of older heads and may benchmark its head
without asking (`policy.auto`); a close cancels the runs, and a merge may benchmark the merge commit
against its first parent for the default branch's history (`policy.on_merge`).

Whether a fact is worth reading is decided here too, so that nothing is asked that no decision
needs: the author's permission only when the risk could start a run (`asks_author`), the config
only when a run is to be stopped or could be started (`close_needs_config`), the merge commit's
parent only when its run is wanted (`CloseRuns.benchmark_merge`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.core.bench import contract, policy
from bot.core.config.schema import BenchConfig
from bot.core.pulls import PullInfo
from bot.core.vocabulary import Level, Trigger


@dataclass(frozen=True)
class Run:
    """One of the pull request's benchmark requests, as far as a push or a close decides on it."""

    correlation_id: str
    head_sha: str
    status: str


def _active(runs: Iterable[Run]) -> list[Run]:
    return [run for run in runs if run.status in contract.ACTIVE]


@dataclass(frozen=True, kw_only=True)
class Start:
    """A benchmark to record, then dispatch: its work key names it (a retry finds it again)."""

    key: str
    number: int | None  # None: a run on the default branch
    base_sha: str
    head_sha: str
    suites: tuple[str, ...]
    trigger: Trigger
    requested_by: str | None = None


# ---------------------------------------------------------------- a push


@dataclass(frozen=True, kw_only=True)
class Push:
    """What a push decides with: whether it may bring a new head (opened, synchronize, reopened),
    the pull request now, its head's risk (None: not reviewed), its benchmarks, and its author's
    permission (None: not asked)."""

    new_head: bool
    pull: PullInfo
    level: Level | None
    runs: tuple[Run, ...]
    author_permission: str | None = None


@dataclass(frozen=True)
class PushRuns:
    """The runs superseded (their correlation ids), and the automatic run to start, if any."""

    stop: tuple[str, ...]
    start: Start | None


def superseded(new_head: bool, head_sha: str, runs: Iterable[Run]) -> tuple[str, ...]:
    """The requested or running benchmarks that a push of ``head_sha`` supersedes: those of other
    heads, when the push may bring a new head (a base change or a draft made ready leaves them)."""
    return tuple(run.correlation_id for run in _active(runs) if new_head and run.head_sha != head_sha)


def asks_author(new_head: bool, level: Level | None, pull: PullInfo, bench: BenchConfig) -> bool:
    """Whether the author's permission is worth asking: everything else says the new head may be
    benchmarked without asking."""
    return new_head and level is not None and policy.auto_candidate(level, pull, bench)


def on_push(push: Push, bench: BenchConfig) -> PushRuns:
    pull, start = push.pull, None
    if (
        push.level is not None
        and push.author_permission is not None
        and asks_author(push.new_head, push.level, pull, bench)
        and policy.auto(push.level, push.author_permission, pull.fork, bench)
    ):
        start = Start(
            key=contract.work_key("auto", pull.repo, f"{pull.number}:{pull.head_sha}"),
            number=pull.number,
            base_sha=pull.base_sha,
            head_sha=pull.head_sha,
            suites=contract.default_suites(bench),
            trigger="auto",
        )
    return PushRuns(superseded(push.new_head, pull.head_sha, push.runs), start)


# ---------------------------------------------------------------- a close


@dataclass(frozen=True, kw_only=True)
class Close:
    """What a close decides with: whether it merged (and its merge commit), the risk of the
    published review of the closed head (None: none), and the pull request's benchmarks."""

    repo: str
    number: int
    merged: bool
    merge_sha: str | None
    level: Level | None
    runs: tuple[Run, ...]


@dataclass(frozen=True)
class CloseRuns:
    """The runs cancelled (their correlation ids), and whether the merge commit is benchmarked
    against its first parent (`merge_run`, once that parent is read)."""

    cancel: tuple[str, ...]
    benchmark_merge: bool


def close_acts(close: Close) -> bool:
    """Whether a close has anything to do: runs to cancel, or a merge to record (else nothing is
    asked of GitHub)."""
    return close.merged or bool(_active(close.runs))


def close_needs_config(close: Close) -> bool:
    """Whether the close has runs to stop, or a merge whose risk could start a run (a merge of an
    unreviewed head, or of no risk, never does): only then is the config read for the benchmarks."""
    return bool(_active(close.runs)) or (close.merged and close.level not in (None, "none"))


def on_close(close: Close, bench: BenchConfig) -> CloseRuns:
    sha = close.merge_sha
    merge_run_wanted = close.merged and sha is not None and bool(contract.SHA.fullmatch(sha))
    return CloseRuns(
        tuple(run.correlation_id for run in _active(close.runs)),
        merge_run_wanted and policy.on_merge(close.level, bench),
    )


def merge_run(close: Close, parent: str | None, bench: BenchConfig) -> Start | None:
    """The run of the merge commit against its first parent, for the default branch's history
    (None for a root commit: nothing to compare it with)."""
    if parent is None or close.merge_sha is None:
        return None
    return Start(
        key=contract.work_key("merge", close.repo, close.merge_sha),
        number=None,
        base_sha=parent,
        head_sha=close.merge_sha,
        suites=contract.default_suites(bench),
        trigger="merge",
        requested_by=f"#{close.number}",
    )
