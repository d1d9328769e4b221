"""The `/bench` pipeline: comments and review bodies that hold a command. The author's permission
first: someone without write access is answered from that alone, once per pull request, so that a
stranger's comments cost one read each. Else one snapshot (the pull request now, the default
branch's config, what the store knows), one decision of the core (`bot.core.bench.policy`), then the
answer: a reaction (eyes, then rocket once dispatched), or `confused` and one short reply that says
why and what to do.

Only new comments count: edits and deletions are not routed here. The bot never acts on its own
comments (its login, and the marker every reply of its carries), nor on any bot's. Each comment is
handled once, whatever delivery carries it: its benchmark request is keyed on the comment's id, and
so are its replies. A `/bench` that starts a run, and the cases of a `/bench bisect`, are admitted
in one database transaction each, so that concurrent comments cannot both pass the cooldowns or the
"one running" rule.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from bot.core.bench import contract, policy
from bot.core.commands import grammar
from bot.core.config.schema import BenchConfig, RepoConfig
from bot.core.pulls import PullInfo
from bot.core.render import bench as render_bench
from bot.core.watch import cases as states
from bot.core.watch import report
from bot.core.watch.cases import ACTIVE as ACTIVE_CASE

from . import benchmarks, repo_config, reviewing, sticky, watch
from .events import CommandEvent
from .ports.github import GitHub, PullRequestGone
from .ports.store import Admission
from .records import Ack, BenchRequest
from .services import Services

log = logging.getLogger("perfbot.commands")

REPLY_MARKER = "<!-- perfbot:reply -->"  # on every reply, so that no reply is ever read as a command


def wants(event: CommandEvent) -> bool:
    return not event.by_bot and REPLY_MARKER not in event.body


@dataclass(frozen=True)
class _Replay:
    """The command's request was recorded by an earlier attempt: carry on, do not decide again."""

    request: BenchRequest


@dataclass(frozen=True, kw_only=True)
class _Snapshot:
    event: CommandEvent
    github: GitHub
    pull: PullInfo
    config: RepoConfig
    config_error: str | None
    facts: policy.Facts

    @property
    def repo(self) -> str:
        return self.event.repo.full_name


def handle(event: CommandEvent, services: Services) -> None:
    command = grammar.find(event.body)
    if command is None:
        return
    repo, number = event.repo.full_name, event.number
    done = f"command:{repo}:{event.subject}"
    if services.store.work.done(done):
        log.info("command handled before; replay ignored", extra={"repo": repo, "pr": number})
        return
    github = services.github.for_installation(event.repo.installation_id)
    own = github.own_login()
    if own is not None and event.login.lower() == own.lower():
        log.info("the bot's own comment; ignored", extra={"repo": repo, "pr": number})
        return
    try:
        permission = github.permission(repo, event.login)  # first: a stranger costs this read alone
        if permission not in policy.WRITE:
            _without_write(services, github, event, command)
            services.store.work.claim(done)
            return
        snapshot = _gather(services, github, event, command, permission)
    except PullRequestGone:
        return
    if isinstance(command, grammar.Run) and snapshot.pull.open:
        _admit(services, snapshot, command)
    elif isinstance(command, grammar.Bisect):
        # The cooldowns are decided as its cases are opened (`_start_bisect`), where the cases an
        # earlier attempt at this comment opened are told apart from other commands'.
        _apply(services, snapshot, policy.decide(command, snapshot.facts, snapshot.config.bench))
    elif isinstance(command, grammar.Dismiss):
        _reply(services, github, event, _dismiss(services, snapshot, command))
    elif isinstance(command, grammar.Cancel) and _cancel_cases(services, snapshot):
        running = benchmarks.active(services, snapshot.repo, snapshot.pull.number)
        for request in running:  # and the pull request's own benchmark, as a plain /bench cancel does
            benchmarks.stop(services, github, request, contract.CANCELLED, snapshot.config.bench)
        _react(github, event, "+1")
        if running:
            _show(services, snapshot)
    else:
        _apply(services, snapshot, _decide(services, snapshot, command))
    services.store.work.claim(done)


def _without_write(services: Services, github: GitHub, event: CommandEvent, command: grammar.Command) -> None:
    """Answer someone without write access from their permission alone: the first time on this pull
    request, a reaction and one reply (help, or why not), so that nobody can make the bot comment in
    a loop; after that, nothing."""
    repo, number = event.repo.full_name, event.number
    decision = policy.without_write(command)
    log.info(
        "command",
        extra={"repo": repo, "pr": number, "user": event.login, "decision": type(decision).__name__},
    )
    if not services.store.work.claim(f"told:{repo}:{number}:{event.login}"):
        return
    if isinstance(decision, policy.ShowHelp):
        config, _ = repo_config.read(github, repo, event.repo.default_branch)
        _react(github, event, "eyes")
        _reply(services, github, event, _help(config.bench))
    else:
        _react(github, event, "confused")
        _reply(services, github, event, render_bench.refusal_reply(decision.reason, decision.hint))


def _gather(
    services: Services, github: GitHub, event: CommandEvent, command: grammar.Command, permission: str
) -> _Snapshot:
    repo, store = event.repo.full_name, services.store
    pull = github.pull(repo, event.number)
    config, config_error = repo_config.read(github, repo, event.repo.default_branch, store.config_problems)
    facts = policy.Facts(
        pull=pull,
        login=event.login,
        permission=permission,
        approved=pull.fork and store.work.approved(repo, pull.number, pull.head_sha),
        seen=_seen(services, event, pull, command),
        active=None,
        user_last=None,
        pr_last=None,
        now=services.now(),
    )
    return _Snapshot(
        event=event,
        github=github,
        pull=pull,
        config=config,
        config_error=config_error,
        facts=facts,
    )


def _seen(services: Services, event: CommandEvent, pull: PullInfo, command: grammar.Command) -> policy.Seen:
    """What tells which head the author of an approval read: a review's commit, else the pushes
    perfbot recorded before the comment was written (by GitHub's clocks)."""
    if not isinstance(command, grammar.Approve):
        return policy.Seen()
    if event.commit_id is not None:
        return policy.Seen(reviewed=event.commit_id)
    if event.created_at is None:
        return policy.Seen()
    pushes = services.store.work.pushes_before(pull.repo, pull.number, event.created_at)
    return policy.Seen(pushes=tuple(policy.Push(sha, at) for sha, at in pushes))


def _decide(services: Services, snapshot: _Snapshot, command: grammar.Command) -> policy.Decision:
    running = benchmarks.active(services, snapshot.repo, snapshot.pull.number)
    active = policy.Active(running[0].head_sha, running[0].run_url) if running else None
    return policy.decide(command, replace(snapshot.facts, active=active), snapshot.config.bench)


def _refuse(services: Services, snapshot: _Snapshot, refusal: policy.Refuse) -> None:
    _react(snapshot.github, snapshot.event, "confused")
    _reply(
        services, snapshot.github, snapshot.event, render_bench.refusal_reply(refusal.reason, refusal.hint)
    )


def _start_bisect(services: Services, snapshot: _Snapshot, decision: policy.StartBisect) -> None:
    """`/bench bisect`: the two commits found among the default branch's known commits (never a
    fork's head), then one case per suite, each bisected within the budget."""
    event, github, repo = snapshot.event, snapshot.github, snapshot.repo
    found = {
        name: services.store.watch.known_commits(repo, sha)
        for name, sha in (("good", decision.good), ("bad", decision.bad))
    }
    for name, sha in (("good", decision.good), ("bad", decision.bad)):
        if len(found[name]) != 1:
            why = "no commit" if not found[name] else f"{len(found[name])} commits"
            _react(github, event, "confused")
            _reply(
                services,
                github,
                event,
                render_bench.refusal_reply(
                    f"the {name} commit {sha} matches {why} of the default branch that perfbot measured or "
                    "recorded as a merge",
                    "name merge commits of the default branch, or commits of its history "
                    "on the dashboard (a bisect never runs a pull request's own head)",
                ),
            )
            return
    good, bad = found["good"][0], found["bad"][0]
    if good == bad:
        _refuse(
            services,
            snapshot,
            policy.Refuse(
                f"{decision.good} and {decision.bad} are one commit, {good[:12]}, written two ways",
                "name the last good commit, then the first bad one",
            ),
        )
        return
    # GitHub's word on the range, before anything is opened or charged: GOOD an ancestor of BAD,
    # and a range small enough to bisect.
    compared = github.compare(repo, good, bad)
    refusal = policy.bisect_range(good, bad, compared)
    if refusal is not None:
        _refuse(services, snapshot, refusal)
        return
    if compared is not None and compared.ahead_by == 1:  # BAD alone: named, no GPU spent on it
        pull = services.store.watch.merge_of(repo, bad) or github.pull_of_commit(repo, bad)
        _reply(services, github, event, watch.single_commit_reply(good, bad, pull[0] if pull else None))
        return
    # The cooldowns decided again in the transaction that opens the cases: two bisects asked at
    # once cannot both pass them.
    refusal, cases = watch.open_by_hand(
        services,
        repo,
        event.repo.installation_id,
        good,
        bad,
        decision.suites,
        decision.metric or "",
        event.login,
        snapshot.pull.number,
        lambda now: policy.cooling_refusal(
            replace(snapshot.facts, user_last=now.user_last, pr_last=now.pr_last), snapshot.config.bench
        ),
    )
    if refusal is not None:
        _refuse(services, snapshot, refusal)
        return
    _react(github, event, "eyes")
    states = []
    for case in cases:
        case = watch.bisect(services, github, case, snapshot.config, event.repo.default_branch)
        states.append((case.suite, case))
    if any(case.state == "bisecting" for _, case in states):
        _react(github, event, "rocket")
    _reply(services, github, event, watch.started_reply(states))


def _dismiss(services: Services, snapshot: _Snapshot, command: grammar.Dismiss) -> str:
    """`/bench dismiss CASE`: the one case of this repository whose key starts so, ended; the reply."""
    matching = services.store.watch.starting(snapshot.repo, command.case)
    named = report.code(command.case)
    if len(matching) != 1:
        what = "no regression case" if not matching else "more than one regression case"
        return f"😕 **Not dismissed:** {what} of this repository start with {named}; name one by its key."
    [case] = matching
    span = f"{report.code(case.good_sha[:12])}..{report.code(case.bad_sha[:12])}"
    about = f"{report.code(case.suite)} {report.code(case.metric)} {span}"
    ended = watch.dismiss(
        services, snapshot.github, case, snapshot.config, snapshot.event.login, command.reason
    )
    if ended is None:
        label = states.LABELS.get(case.state, case.state)
        return f"😕 **Not dismissed:** the case of {about} has ended already ({label})."
    return (
        f"👍 **Dismissed** the case of {about}: no bisect runs for it, and a change beside it opens "
        "no other case."
    )


def _cancel_cases(services: Services, snapshot: _Snapshot) -> bool:
    """`/bench cancel` stops the bisects asked for on this pull request; whether there were any."""
    stopped = False
    for case in services.store.watch.cases(frozenset({snapshot.repo})):
        if case.source == "command" and case.number == snapshot.pull.number and case.state in ACTIVE_CASE:
            stopped |= watch.cancel(services, snapshot.github, case, snapshot.config, snapshot.event.login)
    return stopped


def _admit(services: Services, snapshot: _Snapshot, command: grammar.Run) -> None:
    """Decide on a `/bench` that may start a run and record it, in one transaction."""
    event, pull = snapshot.event, snapshot.pull
    key = contract.work_key("command", snapshot.repo, event.subject)

    def decide(now: Admission) -> tuple[policy.Decision | _Replay, BenchRequest | None]:
        if now.existing is not None:
            return _Replay(now.existing), None
        running = now.active[0] if now.active else None
        facts = replace(
            snapshot.facts,
            user_last=now.user_last,
            pr_last=now.pr_last,
            active=policy.Active(running.head_sha, running.run_url) if running else None,
        )
        decision = policy.decide(command, facts, snapshot.config.bench)
        if not isinstance(decision, policy.Dispatch):
            return decision, None
        return decision, benchmarks.new_request(
            services,
            key=key,
            repo=snapshot.repo,
            installation_id=event.repo.installation_id,
            number=pull.number,
            base_sha=pull.base_sha,
            head_sha=pull.head_sha,
            suites=decision.suites,
            trigger="command",
            rounds=decision.rounds,
            max_rounds=decision.max_rounds,
            requested_by=event.login,
            comment_id=event.comment_id,
        )

    decision, request = services.store.benchmarks.admit(
        contract.correlation_id(key), snapshot.repo, pull.number, event.login, decide
    )
    if isinstance(decision, _Replay):
        _dispatched(services, snapshot, decision.request)
    elif request is not None:
        _react(snapshot.github, snapshot.event, "eyes")
        for older in benchmarks.active(services, snapshot.repo, pull.number):
            if older.head_sha != pull.head_sha:
                benchmarks.stop(services, snapshot.github, older, contract.SUPERSEDED, snapshot.config.bench)
        _dispatched(services, snapshot, request)
    else:
        _apply(services, snapshot, decision)


def _dispatched(services: Services, snapshot: _Snapshot, request: BenchRequest) -> None:
    """Dispatch the recorded request (once), answer with a reaction and show it in the comment."""
    request = benchmarks.resume(
        services, snapshot.github, request, snapshot.config.bench, snapshot.event.repo.default_branch
    )
    if request.status == contract.RUNNING:
        _react(snapshot.github, snapshot.event, "rocket")
    elif request.status == contract.FAILED:
        _react(snapshot.github, snapshot.event, "confused")
    _show(services, snapshot)


def _show(services: Services, snapshot: _Snapshot) -> None:
    """The sticky comment with the benchmark section as it now stands (and a review of the head
    above it, if the store had none)."""
    pull = snapshot.pull
    fresh = reviewing.missing(
        services,
        snapshot.github,
        snapshot.repo,
        pull.number,
        snapshot.event.repo.default_branch,
        pull,
        repo_config.ConfigRead(snapshot.config, snapshot.config_error),
    )
    sticky.write(services, snapshot.github, snapshot.repo, pull.number, pull.head_sha, fresh)


def _apply(services: Services, snapshot: _Snapshot, decision: policy.Decision) -> None:
    event, pull, store, github = snapshot.event, snapshot.pull, services.store, snapshot.github
    log.info(
        "command",
        extra={
            "repo": snapshot.repo,
            "pr": pull.number,
            "user": event.login,
            "decision": type(decision).__name__,
        },
    )
    if isinstance(decision, policy.Refuse):
        _react(github, event, "confused")
        _reply(services, github, event, render_bench.refusal_reply(decision.reason, decision.hint))
        return
    if isinstance(decision, policy.StartBisect):
        _start_bisect(services, snapshot, decision)
        return
    _react(github, event, "eyes")
    if isinstance(decision, policy.ShowHelp):
        _reply(services, github, event, _help(snapshot.config.bench))
    elif isinstance(decision, policy.ApproveHead):
        store.work.approve(snapshot.repo, pull.number, decision.head_sha, event.login)
        _react(github, event, "+1")
        if not decision.current:
            _reply(
                services, github, event, render_bench.stale_approval_reply(decision.head_sha, pull.head_sha)
            )
    elif isinstance(decision, policy.Acknowledge):
        store.work.add_ack(
            Ack(
                repo=snapshot.repo,
                number=pull.number,
                head_sha=decision.head_sha,
                user=event.login,
                reason=decision.reason,
                comment_id=event.comment_id,
                created_at=services.now(),
            ),
            f"ack:{snapshot.repo}:{event.subject}",
        )
        _react(github, event, "+1")
    elif isinstance(decision, policy.CancelRun):
        for request in benchmarks.active(services, snapshot.repo, pull.number):
            benchmarks.stop(services, github, request, contract.CANCELLED, snapshot.config.bench)
        _react(github, event, "+1")
        _show(services, snapshot)


def _help(bench: BenchConfig) -> str:
    return render_bench.help_reply(
        contract.default_suites(bench), contract.known_suites(bench), bench.dispatch.max_rounds
    )


def _react(github: GitHub, event: CommandEvent, content: str) -> None:
    if event.comment_id is not None:
        github.react(event.repo.full_name, event.comment_id, content)


def _reply(services: Services, github: GitHub, event: CommandEvent, body: str) -> None:
    """One reply per command, carrying the marker that keeps every reply from being read as one."""
    repo = event.repo.full_name
    if services.store.work.claim(f"reply:{repo}:{event.subject}"):
        github.reply(repo, event.number, f"{REPLY_MARKER}\n{body}")
