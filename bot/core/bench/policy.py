"""Who may start what: the decision on a `/bench` command, on an automatic run of a push, on a run
of a merge commit and on a scheduled run, from facts the service gathered.

Permission comes from GitHub's collaborator-permission API (write, maintain or admin), never from a
comment's ``author_association``. A pull request from a fork runs on the GPU runners only after a
maintainer's `/bench approve` of its current head commit, the head that maintainer read (a review's
commit, the head named in the comment, or the head that was current when the comment was written);
a new push needs a new approval.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.core.bench import contract
from bot.core.commands import grammar
from bot.core.config.schema import BenchConfig, reaches
from bot.core.pulls import PullInfo

WRITE = ("admin", "write")  # GitHub's `permission`: maintain reads as write, triage as read


@dataclass(frozen=True)
class Active:
    """A benchmark of the pull request that is requested or running."""

    head_sha: str
    run_url: str | None


@dataclass(frozen=True)
class Facts:
    """Everything a decision on a command depends on; ``now`` is the caller's clock."""

    pull: PullInfo
    login: str
    permission: str
    approved: bool  # a maintainer approved the current head (fork pull requests)
    seen_head: str | None  # the head the command's author read (None: a newer push came after it)
    active: Active | None
    user_last: datetime | None  # the asker's last accepted /bench in the repository
    pr_last: datetime | None  # the last accepted /bench on the pull request
    now: datetime


@dataclass(frozen=True)
class Refuse:
    """Say no: ``reason`` and what to do instead, each one short sentence."""

    reason: str
    hint: str


@dataclass(frozen=True)
class Dispatch:
    suites: tuple[str, ...]
    rounds: int | None
    max_rounds: int | None


@dataclass(frozen=True)
class ShowHelp:
    pass


@dataclass(frozen=True)
class CancelRun:
    pass


@dataclass(frozen=True)
class ApproveHead:
    """Approve ``head_sha``, the head the approver read; ``current``: it is still the head."""

    head_sha: str
    current: bool = True


@dataclass(frozen=True)
class Acknowledge:
    head_sha: str
    reason: str


Decision = Refuse | Dispatch | ShowHelp | CancelRun | ApproveHead | Acknowledge


def decide(command: grammar.Command, facts: Facts, bench: BenchConfig) -> Decision:
    """What to do about ``command``."""
    if isinstance(command, grammar.Help):
        return ShowHelp()
    if facts.permission not in WRITE:
        return Refuse("only people with write access to this repository can start benchmarks",
                      "ask a maintainer to comment /bench for you")
    if not facts.pull.open:
        return Refuse("this pull request is closed", "reopen it to benchmark it")
    if isinstance(command, grammar.Invalid):
        return Refuse(command.problem, "comment /bench help to see what /bench understands")
    if isinstance(command, grammar.Approve):
        return _approve(facts)
    if isinstance(command, grammar.Ack):
        return Acknowledge(facts.pull.head_sha, command.reason)
    if isinstance(command, grammar.Cancel):
        if facts.active is None:
            return Refuse("no benchmark of this pull request is running", "comment /bench to start one")
        return CancelRun()
    return _run(command, facts, bench)


def _approve(facts: Facts) -> Decision:
    """An approval binds to the head its author read, never to the head at processing time: a push
    between the comment and its processing must not be approved unread."""
    if facts.seen_head is None:
        return Refuse(f"the head {facts.pull.head_sha[:12]} is not the commit this approval was written for "
                      "(it was pushed after the comment, or the comment names another commit)",
                      f"read the new head, then comment /bench approve {facts.pull.head_sha[:12]}")
    return ApproveHead(facts.seen_head, current=facts.seen_head == facts.pull.head_sha)


def _run(command: grammar.Run, facts: Facts, bench: BenchConfig) -> Decision:
    pull, dispatch = facts.pull, bench.dispatch
    if pull.fork and not facts.approved:
        return Refuse(f"this pull request comes from a fork and its head {pull.head_sha[:12]} is not "
                      "approved for the GPU runners",
                      "a maintainer who has read the change can comment /bench approve, then /bench; "
                      "a new push needs a new approval")
    if facts.active is not None and facts.active.head_sha == pull.head_sha:
        where = f" ({facts.active.run_url})" if facts.active.run_url else ""
        return Refuse(f"a benchmark of this head is already running{where}",
                      "wait for its result, or comment /bench cancel first")
    for last, limit, whose in ((facts.user_last, dispatch.cooldown.user, "your last /bench"),
                               (facts.pr_last, dispatch.cooldown.pr, "the last /bench on this pull request")):
        wait = _wait(last, limit, facts.now)
        if wait is not None:
            return Refuse(f"{whose} was less than {_duration(limit)} ago",
                          f"this repository allows one every {_duration(limit)}; "
                          f"try again in {_duration(wait)}")
    unknown = [s for s in command.suites if s not in contract.known_suites(bench)]
    if unknown:
        return Refuse(f"unknown suite '{unknown[0]}'",
                      f"suites here: {', '.join(contract.known_suites(bench))}")
    for value, option in ((command.rounds, "--rounds"), (command.max_rounds, "--max-rounds")):
        if value is not None and value > dispatch.max_rounds:
            return Refuse(f"{option} {value} is more than this repository allows ({dispatch.max_rounds})",
                          f"ask for at most {dispatch.max_rounds} rounds per side")
    if command.rounds and command.max_rounds and command.max_rounds < command.rounds:
        return Refuse("--max-rounds is smaller than --rounds",
                      "--max-rounds caps the adaptive rounds above --rounds")
    return Dispatch(command.suites or contract.default_suites(bench), command.rounds, command.max_rounds)


def _wait(last: datetime | None, limit_s: int, now: datetime) -> timedelta | None:
    if last is None or limit_s <= 0:
        return None
    ready = last + timedelta(seconds=limit_s)
    return ready - now if ready > now else None


def _duration(value: int | timedelta) -> str:
    seconds = int(value.total_seconds()) if isinstance(value, timedelta) else value
    seconds = max(seconds, 1)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{-(-seconds // 60)} min"
    return f"{-(-seconds // 3600)} h"


def auto_candidate(level: str, pull: PullInfo, bench: BenchConfig) -> bool:
    """Whether a push may be benchmarked without asking, before asking GitHub who its author is:
    an open, ready pull request of the repository itself whose risk reaches the configured level."""
    return (pull.open and not pull.draft and not pull.fork and bool(pull.author)
            and reaches(level, bench.dispatch.auto))


def auto(level: str, author_permission: str, fork: bool, bench: BenchConfig) -> bool:
    """Whether a push is benchmarked without asking: the risk reaches the configured level and the
    author is trusted (write access, and not from a fork, whose pushes nobody has read yet)."""
    return reaches(level, bench.dispatch.auto) and author_permission in WRITE and not fork


def on_merge(level: str | None, bench: BenchConfig) -> bool:
    """Whether a merge commit is benchmarked against its first parent for the default branch's history."""
    return level is not None and reaches(level, bench.dispatch.on_merge)


def schedule_slot(bench: BenchConfig, now: datetime) -> str | None:
    """The slot a scheduled run of the default branch belongs to (one run per slot), or None when
    none is due: daily from ``schedule_hour`` UTC, weekly from that hour on Mondays."""
    dispatch = bench.dispatch
    if dispatch.schedule == "daily" and now.hour >= dispatch.schedule_hour:
        return now.date().isoformat()
    if dispatch.schedule == "weekly" and (now.weekday(), now.hour) >= (0, dispatch.schedule_hour):
        year, week, _ = now.isocalendar()
        return f"{year}-W{week:02d}"
    return None
