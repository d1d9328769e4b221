"""The `pull_request` pipeline: for a push and for a close, gather one snapshot (each fact read once,
and only the facts a decision needs), decide in the core, apply the plan.

A push (opened, synchronize, reopened; a draft made ready; a base changed) reads the pull request
once, the default branch's config once and the diff once, and the author's permission only when
the head's risk could start an automatic run; the core plans the review (`bot.core.review.plan`)
and what happens to the pull request's benchmarks (`bot.core.bench.pull_request`); then the check
run and label are published, older heads' benchmarks superseded, an automatic benchmark started,
and the sticky comment written once from what is now stored. A close cancels the pull request's
benchmarks, records a merge for the dashboard with the risk of the published review
(`bot.core.review.record`, without asking GitHub again) and benchmarks a risky merge commit for
the default branch's history.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.core.bench import contract
from bot.core.bench import pull_request as bench_plan
from bot.core.config.schema import BenchConfig
from bot.core.pulls import PullInfo
from bot.core.review import plan as review_plan
from bot.core.review import record
from bot.core.risk.stepmap_scoring import MapEvidence

from . import benchmarks, repo_config, reviewing, step_maps, sticky
from .events import PullRequestAction, PullRequestEvent
from .ports.github import GitHub, PullRequestGone
from .records import BenchRequest, Merge, Review
from .repo_config import ConfigRead
from .services import Services

log = logging.getLogger("perfbot.review")

NEW_HEADS: tuple[PullRequestAction, ...] = ("opened", "synchronize", "reopened")  # may bring a new head


def wants(event: PullRequestEvent) -> bool:
    if event.action == "closed":
        return True
    if event.action == "edited" and not event.base_changed:
        return False  # a title or body edit cannot change the risk
    return event.open


def handle(event: PullRequestEvent, services: Services) -> None:
    if event.repo.record is not None:  # learn the repository and its visibility from every event about it
        services.store.installations.add(event.repo.installation_id, [event.repo.record])
    if event.action == "closed":
        closed = _gather_close(event, services)
        if closed is not None:
            _apply_close(services, closed, _decide_close(closed))
    else:
        if event.action in NEW_HEADS:  # every push is kept: an approval binds to one pushed before it
            services.store.work.record_push(
                event.repo.full_name, event.number, event.head_sha, event.updated_at or services.now()
            )
        pushed = _gather_push(event, services)
        if pushed is not None:
            _apply_push(services, pushed, _decide_push(pushed))


def _facts(
    html_url: str,
    head_sha: str,
    default_branch: str,
    config: ConfigRead,
    diff: str,
    step_map: MapEvidence | None = None,
) -> review_plan.PullFacts:
    return review_plan.PullFacts(
        html_url=html_url,
        head_sha=head_sha,
        default_branch=default_branch,
        diff=diff,
        config=config.config,
        config_error=config.problem,
        step_map=step_map,
    )


def _runs(requests: tuple[BenchRequest, ...]) -> tuple[bench_plan.Run, ...]:
    return tuple(bench_plan.Run(r.correlation_id, r.head_sha, r.status) for r in requests)


def _stop(
    services: Services,
    github: GitHub,
    requests: tuple[BenchRequest, ...],
    stop: tuple[str, ...],
    status: str,
    bench: BenchConfig,
) -> None:
    for request in requests:
        if request.correlation_id in stop:
            benchmarks.stop(services, github, request, status, bench)


def _start(
    services: Services, github: GitHub, event: PullRequestEvent, start: bench_plan.Start, bench: BenchConfig
) -> None:
    benchmarks.start(services, github, _request(services, event, start), bench, event.repo.default_branch)


def _request(services: Services, event: PullRequestEvent, start: bench_plan.Start) -> BenchRequest:
    return benchmarks.new_request(
        services,
        key=start.key,
        repo=event.repo.full_name,
        installation_id=event.repo.installation_id,
        number=start.number,
        base_sha=start.base_sha,
        head_sha=start.head_sha,
        suites=start.suites,
        trigger=start.trigger,
        requested_by=start.requested_by,
    )


# ---------------------------------------------------------------- a push


@dataclass(frozen=True, kw_only=True)
class _Push:
    """What a push's decisions read, each read once."""

    event: PullRequestEvent
    github: GitHub
    pull: PullInfo
    requests: tuple[BenchRequest, ...]  # the pull request's benchmarks
    config: ConfigRead
    stored: Review | None
    facts: review_plan.PullFacts | None  # None: the head is not reviewed (a draft, or closed)
    risk: review_plan.Assessment | None
    author_permission: str | None  # None: not asked (the risk cannot start a run)

    @property
    def new_head(self) -> bool:
        return self.event.action in NEW_HEADS


@dataclass(frozen=True)
class _PushPlan:
    review: review_plan.ReviewPlan | None
    runs: bench_plan.PushRuns


def _gather_push(event: PullRequestEvent, services: Services) -> _Push | None:
    """The push's snapshot; None when there is nothing to do (the pull request is gone, a newer
    push superseded this one, or there is no head to review and no run to stop)."""
    repo, number, branch = event.repo.full_name, event.number, event.repo.default_branch
    github = services.github.for_installation(event.repo.installation_id)
    try:
        pull = github.pull(repo, number)
    except PullRequestGone:
        log.info("pull request gone; dropped", extra={"repo": repo, "pr": number})
        return None
    if pull.head_sha != event.head_sha:
        log.info("superseded by a newer push; skipped", extra={"repo": repo, "pr": number})
        return None
    new_head = event.action in NEW_HEADS
    requests = tuple(services.store.benchmarks.for_pull(repo, number))
    reviewed = review_plan.reviewed(pull, event.draft)
    if not reviewed and not bench_plan.superseded(new_head, pull.head_sha, _runs(requests)):
        return None
    config = repo_config.read(github, repo, branch, services.store.config_problems)
    diff = github.pull_diff(repo, number) if reviewed else None
    facts = None
    if diff is not None:
        mapped = step_maps.evidence(services, github, repo, step_maps.changed_paths(diff), diff)
        facts = _facts(pull.html_url, pull.head_sha, branch, config, diff, mapped)
    risk = services.assess(facts) if facts is not None else None  # asking the author depends on it
    asks = bench_plan.asks_author(new_head, risk.level if risk else None, pull, config.config.bench)
    return _Push(
        event=event,
        github=github,
        pull=pull,
        requests=requests,
        config=config,
        stored=services.store.reviews.get(repo, number),
        facts=facts,
        risk=risk,
        author_permission=github.permission(repo, pull.author) if asks else None,
    )


def _decide_push(push: _Push) -> _PushPlan:
    review = review_plan.plan(push.facts, push.risk) if push.facts is not None else None
    runs = bench_plan.on_push(
        bench_plan.Push(
            new_head=push.new_head,
            pull=push.pull,
            level=review.level if review is not None else None,
            runs=_runs(push.requests),
            author_permission=push.author_permission,
        ),
        push.config.config.bench,
    )
    return _PushPlan(review, runs)


def _apply_push(services: Services, push: _Push, plan: _PushPlan) -> None:
    """Publish the review, stop the superseded runs, start the automatic one, then write the sticky
    comment once from what is now stored."""
    event, github, pull, bench = push.event, push.github, push.pull, push.config.config.bench
    review = reviewing.publish(github, push.stored, pull, plan.review) if plan.review is not None else None
    _stop(services, github, push.requests, plan.runs.stop, contract.SUPERSEDED, bench)
    if plan.runs.start is not None:
        _start(services, github, event, plan.runs.start, bench)
    sticky.write(services, github, pull.repo, pull.number, pull.head_sha, review)
    if review is not None:
        log.info(
            "reviewed",
            extra={"repo": pull.repo, "pr": pull.number, "score": review.score, "risk": review.level},
        )


# ---------------------------------------------------------------- a close


@dataclass(frozen=True, kw_only=True)
class _Close:
    """What a close's decisions read, each read once."""

    event: PullRequestEvent
    github: GitHub
    requests: tuple[BenchRequest, ...]  # the pull request's benchmarks
    published: record.Published | None  # the stored review of the closed head
    runs: bench_plan.Close
    config: ConfigRead | None  # None: no decision needs it
    facts: review_plan.PullFacts | None  # the merged head's, to score it now; None: not needed, or gone


@dataclass(frozen=True)
class _ClosePlan:
    merge: record.Risk | None  # None: not merged
    runs: bench_plan.CloseRuns | None  # None: nothing to stop, nothing to start


def _gather_close(event: PullRequestEvent, services: Services) -> _Close | None:
    """The close's snapshot; None when there is nothing to cancel and nothing to record (then
    nothing is asked of GitHub)."""
    repo, number, branch = event.repo.full_name, event.number, event.repo.default_branch
    requests = tuple(services.store.benchmarks.for_pull(repo, number))
    stored = services.store.reviews.get(repo, number)
    reviewed = stored if stored is not None and stored.head_sha == event.head_sha else None
    runs = bench_plan.Close(
        repo=repo,
        number=number,
        merged=event.merged_into_default_branch,  # a merge into another branch: a plain close
        merge_sha=event.merge_commit_sha,
        level=reviewed.level if reviewed is not None else None,
        runs=_runs(requests),
    )
    if not bench_plan.close_acts(runs):
        return None
    published = (
        None
        if reviewed is None
        else record.Published(
            risk=record.Risk(score=reviewed.score, level=reviewed.level, reasons=reviewed.reasons),
            complete=bool(reviewed.blocks),
        )
    )
    scores = event.merged_into_default_branch and record.scores_merge(published)
    github = services.github.for_installation(event.repo.installation_id)
    needs_config = scores or bench_plan.close_needs_config(runs)
    config = repo_config.read(github, repo, branch) if needs_config else None
    facts = _merged_head(github, event, config) if scores and config is not None else None
    return _Close(
        event=event,
        github=github,
        requests=requests,
        published=published,
        runs=runs,
        config=config,
        facts=facts,
    )


def _merged_head(github: GitHub, event: PullRequestEvent, config: ConfigRead) -> review_plan.PullFacts | None:
    """The facts to score the merged head with; None when its diff is gone (then the merge is
    recorded with what is known)."""
    try:
        diff = github.pull_diff(event.repo.full_name, event.number)
    except PullRequestGone:
        return None
    return _facts(event.html_url, event.head_sha, event.repo.default_branch, config, diff)


def _decide_close(close: _Close) -> _ClosePlan:
    scored = review_plan.plan(close.facts).risk if close.facts is not None else None
    merge = record.merge_risk(close.published, scored) if close.event.merged_into_default_branch else None
    runs = None
    if close.config is not None and bench_plan.close_needs_config(close.runs):
        runs = bench_plan.on_close(close.runs, close.config.config.bench)
    return _ClosePlan(merge, runs)


def _apply_close(services: Services, close: _Close, plan: _ClosePlan) -> None:
    """Record the merge, cancel the pull request's runs, then benchmark the merge commit."""
    event, github = close.event, close.github
    if plan.merge is not None:
        risk, repo = plan.merge, event.repo.full_name
        services.store.dashboard.record_merge(
            Merge(
                repo=repo,
                number=event.number,
                title=event.title,
                merge_sha=event.merge_commit_sha,
                head_sha=event.head_sha,
                score=risk.score,
                level=risk.level,
                merged_at=event.merged_at,
                author=event.author,
                url=event.html_url,
                reasons=risk.reasons,
            )
        )
        log.info("merge recorded", extra={"repo": repo, "pr": event.number, "level": risk.level})
    if plan.runs is None or close.config is None:
        return
    bench = close.config.config.bench
    try:
        _stop(services, github, close.requests, plan.runs.cancel, contract.CANCELLED, bench)
        if plan.runs.benchmark_merge:
            _benchmark_merge(services, close, bench)
    except PullRequestGone:
        log.info(
            "repository gone; closed pull request left as it is",
            extra={"repo": event.repo.full_name, "pr": event.number},
        )


def _benchmark_merge(services: Services, close: _Close, bench: BenchConfig) -> None:
    """The merge commit's run, gathered, decided and applied on its own: its first parent is read
    only once the merge is recorded and the runs are cancelled, so that a merge commit GitHub does
    not find (it answers 422, for good) costs neither."""
    merge_sha = close.runs.merge_sha
    parent = close.github.first_parent(close.runs.repo, merge_sha) if merge_sha is not None else None
    start = bench_plan.merge_run(close.runs, parent, bench)
    if start is None:
        return
    request = _request(services, close.event, start)
    if benchmarks.within_budget(services, request, close.runs.level or "none", bench):
        benchmarks.start(services, close.github, request, bench, close.event.repo.default_branch)
