"""Who may start what: the decision on a `/bench` command, on an automatic run of a push, on a run
of a merge commit and on a scheduled run, from facts the service gathered.

Permission comes from GitHub's collaborator-permission API (write, maintain or admin), never from a
comment's ``author_association``. A pull request from a fork runs on the GPU runners only after a
maintainer's `/bench approve` of its current head commit, the head that maintainer read (`Seen`: a
review's commit, the full SHA the comment names, the one push before the comment that a shorter SHA
names, or the head last pushed before the comment was written); a new push needs a new approval.
An approval is always of a full SHA: a prefix only picks among the heads pushed before the comment,
so that a commit ground to share it and pushed later is never the one approved.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.core.bench import contract
from bot.core.commands import grammar
from bot.core.config.schema import BenchConfig, reaches
from bot.core.pulls import PullInfo
from bot.core.vocabulary import Level

WRITE = ("admin", "write")  # GitHub's `permission`: maintain reads as write, triage as read
# The most commits `/bench bisect GOOD BAD` bisects: about 7 probes of a plain bisection, each a GPU
# run; a wider range is narrowed by hand first (or a merge run's case, which the watch opens itself).
MAX_BISECT_COMMITS = 128


@dataclass(frozen=True)
class CommitRange:
    """GitHub's comparison of two commits (``compare/BASE...HEAD``): ``status`` is ahead when BASE
    is an ancestor of HEAD, behind when HEAD is one of BASE, identical when they are one commit, else
    diverged; ``ahead_by``: the commits HEAD has that BASE lacks (the range's size when ahead)."""

    status: str
    ahead_by: int
    behind_by: int


@dataclass(frozen=True)
class Active:
    """A benchmark of the pull request that is requested or running."""

    head_sha: str
    run_url: str | None


@dataclass(frozen=True)
class Push:
    """A head pushed to the pull request, at GitHub's time of the event that announced it."""

    head_sha: str
    at: datetime


@dataclass(frozen=True)
class Seen:
    """What tells which head the author of an approval read: the commit of the review it came in,
    else the pull request's pushes before the comment was written, oldest first (by their time,
    then in the order they were recorded); none when the comment's time is unknown."""

    reviewed: str | None = None
    pushes: tuple[Push, ...] = ()


@dataclass(frozen=True)
class Facts:
    """Everything a decision on a command depends on; ``now`` is the caller's clock."""

    pull: PullInfo
    login: str
    permission: str
    approved: bool  # a maintainer approved the current head (fork pull requests)
    seen: Seen  # what tells which head the author of an approval read
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


@dataclass(frozen=True)
class StartBisect:
    """Bisect ``good``..``bad`` (as written: the service finds them among the default branch's
    commits it knows) on each of ``suites``; ``metric`` None: each suite's headline metric."""

    good: str
    bad: str
    suites: tuple[str, ...]
    metric: str | None


Decision = Refuse | Dispatch | ShowHelp | CancelRun | ApproveHead | Acknowledge | StartBisect


def decide(command: grammar.Command, facts: Facts, bench: BenchConfig) -> Decision:
    """What to do about ``command``."""
    if isinstance(command, grammar.Help) or facts.permission not in WRITE:
        return without_write(command)
    if isinstance(command, grammar.Bisect):  # of the default branch: the pull request may be merged
        return _bisect(command, facts, bench)
    if not facts.pull.open:
        return Refuse("this pull request is closed", "reopen it to benchmark it")
    if isinstance(command, grammar.Invalid):
        return Refuse(command.problem, "comment /bench help to see what /bench understands")
    if isinstance(command, grammar.Approve):
        return _approve(command, facts)
    if isinstance(command, grammar.Ack):
        return Acknowledge(facts.pull.head_sha, command.reason)
    if isinstance(command, grammar.Cancel):
        if facts.active is None:
            return Refuse("no benchmark of this pull request is running", "comment /bench to start one")
        return CancelRun()
    if isinstance(command, grammar.Dismiss):  # answered by the watch, which knows the cases
        return Refuse("a regression case is dismissed by the watch", "comment /bench help")
    return _run(command, facts, bench)


def without_write(command: grammar.Command) -> ShowHelp | Refuse:
    """The answer to someone without write access, which the command alone decides: help is for
    everyone, everything else is refused (nothing else needs to be read for it)."""
    if isinstance(command, grammar.Help):
        return ShowHelp()
    return Refuse(
        "only people with write access to this repository can start benchmarks",
        "ask a maintainer to comment /bench for you",
    )


def _approve(command: grammar.Approve, facts: Facts) -> Decision:
    """An approval binds to the head its author read, never to the head at processing time: a push
    between the comment and its processing must not be approved unread."""
    seen = seen_head(command.sha, facts.seen, facts.pull.head_sha)
    if isinstance(seen, Refuse):
        return seen
    return ApproveHead(seen, current=seen == facts.pull.head_sha)


def seen_head(named: str | None, seen: Seen, head: str) -> str | Refuse:
    """The full SHA of the head the approver read: the review's commit; the SHA the comment names,
    if in full; else the one push before the comment whose SHA starts with the one named; else the
    head last pushed before the comment, if that is still the head. Anything less certain is
    refused, with the full SHA of the head to name instead."""
    hint = f"read the head, then comment /bench approve {head}"
    if seen.reviewed is not None:
        return seen.reviewed
    if named is not None and contract.SHA.fullmatch(named):
        return named
    if named is not None:
        matches = sorted({push.head_sha for push in seen.pushes if push.head_sha.startswith(named)})
        if len(matches) == 1:
            return matches[0]
        if matches:
            return Refuse(f"{named} is the start of {len(matches)} commits pushed to this pull request", hint)
        return Refuse(f"no commit pushed to this pull request before your comment starts with {named}", hint)
    if not seen.pushes:
        return Refuse(
            "perfbot knows of no push of this pull request before your comment, so it cannot tell "
            "which head you read",
            hint,
        )
    last = seen.pushes[-1]
    if len({push.head_sha for push in seen.pushes if push.at == last.at}) > 1:
        return Refuse(
            "several commits were pushed in the same second before your comment, so perfbot "
            "cannot tell which head you read",
            hint,
        )
    if last.head_sha != head:
        return Refuse(
            f"the head {head[:12]} is not the one this pull request had when your comment was "
            f"written ({last.head_sha[:12]}): it was pushed after the comment",
            hint,
        )
    return last.head_sha


def _run(command: grammar.Run, facts: Facts, bench: BenchConfig) -> Decision:
    pull, dispatch = facts.pull, bench.dispatch
    if pull.fork and not facts.approved:
        return Refuse(
            f"this pull request comes from a fork and its head {pull.head_sha[:12]} is not "
            "approved for the GPU runners",
            "a maintainer who has read the change can comment /bench approve, then /bench; "
            "a new push needs a new approval",
        )
    if facts.active is not None and facts.active.head_sha == pull.head_sha:
        where = f" ({facts.active.run_url})" if facts.active.run_url else ""
        return Refuse(
            f"a benchmark of this head is already running{where}",
            "wait for its result, or comment /bench cancel first",
        )
    cooling = cooling_refusal(facts, bench)
    if cooling is not None:
        return cooling
    unknown = [s for s in command.suites if s not in contract.known_suites(bench)]
    if unknown:
        return Refuse(
            f"unknown suite '{unknown[0]}'", f"suites here: {', '.join(contract.known_suites(bench))}"
        )
    for value, option in ((command.rounds, "--rounds"), (command.max_rounds, "--max-rounds")):
        if value is not None and value > dispatch.max_rounds:
            return Refuse(
                f"{option} {value} is more than this repository allows ({dispatch.max_rounds})",
                f"ask for at most {dispatch.max_rounds} rounds per side",
            )
    if command.rounds and command.max_rounds and command.max_rounds < command.rounds:
        return Refuse(
            "--max-rounds is smaller than --rounds", "--max-rounds caps the adaptive rounds above --rounds"
        )
    return Dispatch(command.suites or contract.default_suites(bench), command.rounds, command.max_rounds)


def cooling_refusal(facts: Facts, bench: BenchConfig) -> Refuse | None:
    """The refusal of a command that came before the cooldowns ran out, if it did."""
    dispatch = bench.dispatch
    for last, limit, whose in (
        (facts.user_last, dispatch.cooldown.user, "your last /bench"),
        (facts.pr_last, dispatch.cooldown.pr, "the last /bench on this pull request"),
    ):
        wait = _wait(last, limit, facts.now)
        if wait is not None:
            return Refuse(
                f"{whose} was less than {_duration(limit)} ago",
                f"this repository allows one every {_duration(limit)}; try again in {_duration(wait)}",
            )
    return None


def _bisect(command: grammar.Bisect, facts: Facts, bench: BenchConfig) -> Decision:
    """A bisect runs only commits of the default branch (the service checks them), never a fork's
    head; the cooldowns of `/bench` apply, and each suite must be known."""
    cooling = cooling_refusal(facts, bench)
    if cooling is not None:
        return cooling
    unknown = [s for s in command.suites if s not in contract.known_suites(bench)]
    if unknown:
        return Refuse(
            f"unknown suite '{unknown[0]}'", f"suites here: {', '.join(contract.known_suites(bench))}"
        )
    if command.good == command.bad:
        return Refuse(
            "the good and the bad commit are the same", "name the last good commit, then the first bad one"
        )
    suites = command.suites or contract.default_suites(bench)
    return StartBisect(command.good, command.bad, suites, command.metric)


def bisect_range(good: str, bad: str, compared: CommitRange | None) -> Refuse | None:
    """Why GOOD..BAD (as GitHub compared them; None: GitHub knows no such pair, or they share no
    history) cannot be bisected, if it cannot: GOOD must be an ancestor of BAD, another commit,
    and the range at most `MAX_BISECT_COMMITS` commits."""
    hint = "name the last good commit, then the first bad one, both of the default branch"
    if compared is None:
        return Refuse(
            f"GitHub cannot compare {good[:12]} with {bad[:12]}: unknown or unrelated commits", hint
        )
    if compared.status == "identical":
        return Refuse(f"{good[:12]} and {bad[:12]} are the same commit", hint)
    if compared.status == "behind":
        return Refuse(
            f"the range is reversed: {bad[:12]} is {compared.behind_by} commits before {good[:12]}",
            f"swap them: /bench bisect {bad[:12]} {good[:12]}",
        )
    if compared.status != "ahead":
        return Refuse(f"{good[:12]} is not an ancestor of {bad[:12]} (their histories diverged)", hint)
    if compared.ahead_by > MAX_BISECT_COMMITS:
        return Refuse(
            f"{good[:12]}..{bad[:12]} holds {compared.ahead_by} commits, more than the "
            f"{MAX_BISECT_COMMITS} a /bench bisect takes",
            "narrow the range first (the dashboard's history shows where the metric changed)",
        )
    return None


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


def auto_candidate(level: Level, pull: PullInfo, bench: BenchConfig) -> bool:
    """Whether a push may be benchmarked without asking, before asking GitHub who its author is:
    an open, ready pull request of the repository itself whose risk reaches the configured level."""
    return (
        pull.open
        and not pull.draft
        and not pull.fork
        and bool(pull.author)
        and reaches(level, bench.dispatch.auto)
    )


def auto(level: Level, author_permission: str, fork: bool, bench: BenchConfig) -> bool:
    """Whether a push is benchmarked without asking: the risk reaches the configured level and the
    author is trusted (write access, and not from a fork, whose pushes nobody has read yet)."""
    return reaches(level, bench.dispatch.auto) and author_permission in WRITE and not fork


def on_merge(level: Level | None, bench: BenchConfig) -> bool:
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
