"""Benchmark requests on the GPU runners, applied: record a request, dispatch its workflow exactly
once, follow it with its `perfbot / bench` check run, stop it (cancelled, or superseded by a newer
push); and the scheduled runs of the default branch. What to start is decided in the core
(`bot.core.bench.policy`); the sticky comment's section is composed by `bot.service.sticky`.

Exactly once: a request is stored under a correlation id derived from its work key before GitHub
hears of it, and marked ``dispatching`` just before the dispatch. A retry (a crash, a timeout, a
replayed delivery) finds the request; if it was dispatching, it looks the run up by its correlation
id before it would dispatch again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from bot.core.bench import contract, policy
from bot.core.bench import report as bench_report
from bot.core.config.schema import BenchConfig, RepoConfig
from bot.core.watch import budget as watch_budget

from .bench_section import request_section
from .ports.github import DispatchRefused, GitHub
from .records import BenchRequest, WorkflowRun
from .services import Services

log = logging.getLogger("perfbot.bench")

FIND_ATTEMPTS = 4  # looking for a run whose dispatch may have reached GitHub before a crash
FIND_WAIT_S = 2.0


def new_request(
    services: Services,
    *,
    key: str,
    repo: str,
    installation_id: int | None,
    number: int | None,
    base_sha: str,
    head_sha: str,
    suites: tuple[str, ...],
    trigger: contract.Trigger,
    rounds: int | None = None,
    max_rounds: int | None = None,
    requested_by: str | None = None,
    comment_id: int | None = None,
) -> BenchRequest:
    """The record of a benchmark to run, not yet stored: its correlation id comes from its work key."""
    return BenchRequest(
        correlation_id=contract.correlation_id(key),
        repo=repo,
        installation_id=installation_id,
        number=number,
        base_sha=base_sha,
        head_sha=head_sha,
        suites=suites,
        rounds=rounds,
        max_rounds=max_rounds,
        trigger=trigger,
        requested_by=requested_by,
        comment_id=comment_id,
        status=contract.REQUESTED,
        created_at=services.now(),
    )


def start(
    services: Services, github: GitHub, request: BenchRequest, bench: BenchConfig, default_branch: str
) -> BenchRequest:
    """Record the request, then dispatch it, unless this work was recorded before: then carry on
    from where it stood (a request already dispatched is returned as it is)."""
    stored, _ = services.store.benchmarks.open(request)
    return resume(services, github, stored, bench, default_branch)


def resume(
    services: Services, github: GitHub, request: BenchRequest, bench: BenchConfig, default_branch: str
) -> BenchRequest:
    """Dispatch a recorded request that is not yet dispatched (or may not be); leave any other as it is."""
    if request.status not in (contract.REQUESTED, contract.DISPATCHING):
        log.info(
            "benchmark requested before; not dispatched again",
            extra={"repo": request.repo, "correlation_id": request.correlation_id, "status": request.status},
        )
        return request
    return publish_check(services, github, _dispatch(services, github, request, bench, default_branch), bench)


def _dispatch(
    services: Services, github: GitHub, request: BenchRequest, bench: BenchConfig, default_branch: str
) -> BenchRequest:
    """Send the request to GitHub; its new state (running, or failed), stored before its check run
    is published: a check run GitHub refuses (no Checks: write, a 5xx) must not leave the request
    dispatching (a retry must know it may have been sent, so ``dispatching`` is stored before)."""
    workflow = bench.dispatch.workflow
    run = None
    if request.status == contract.DISPATCHING:  # sent before, then lost: did it reach GitHub?
        run = _look_for_run(github, request.repo, workflow, request.correlation_id)
    else:
        request = _save(services, replace(request, status=contract.DISPATCHING))
    if run is None:
        inputs = _inputs(services, request)
        try:
            run = github.dispatch(request.repo, workflow, default_branch, inputs)
        except DispatchRefused as refused:
            log.warning(
                "dispatch refused",
                extra={
                    "repo": request.repo,
                    "status": refused.status,
                    "correlation_id": request.correlation_id,
                },
            )
            return _save(
                services,
                replace(
                    request,
                    status=contract.FAILED,
                    completed_at=services.now(),
                    error=_refusal_text(refused, workflow),
                ),
            )
        if run is None:  # no run details (older GitHub Enterprise Server): its list names it
            run = github.find_run(request.repo, workflow, request.correlation_id)
    running = replace(
        request,
        status=contract.RUNNING,
        run_id=run.id if run else None,
        run_url=run.html_url if run else None,
    )
    log.info(
        "benchmark dispatched",
        extra={
            "repo": request.repo,
            "correlation_id": request.correlation_id,
            "run_id": running.run_id,
            "trigger": request.trigger,
        },
    )
    return _save(services, running)


def _inputs(services: Services, request: BenchRequest) -> dict[str, str]:
    """The contract's inputs of a request; a bisect's metric is its regression case's."""
    if request.trigger == "bisect":
        case = services.store.watch.by_correlation(request.correlation_id)
        return contract.bisect_inputs(
            request.base_sha,
            request.head_sha,
            request.suites[0],
            case.metric if case else "",
            request.rounds,
            request.max_rounds,
            request.correlation_id,
        )
    return contract.inputs(
        request.number,
        request.base_sha,
        request.head_sha,
        request.suites,
        request.rounds,
        request.max_rounds,
        request.correlation_id,
    )


def _charge_key(request: BenchRequest) -> str:
    return f"budget:{request.correlation_id}"


def settle(services: Services, request: BenchRequest, minutes: float | None) -> None:
    """A default-branch run's charge settled to the runner time its workflow run took, once known
    (a run charged at ``run_minutes`` may take longer or shorter); nothing when it is not."""
    if minutes is not None and request.trigger in ("merge", "schedule"):
        services.store.watch.settle(_charge_key(request), minutes)


def within_budget(services: Services, request: BenchRequest, level: str, bench: BenchConfig) -> bool:
    """Charge a default-branch run to its repository's GPU budget of today, riskiest first
    (`bot.core.watch.budget`); False, and the run recorded as skipped for the budget, when its
    risk's share of the day is spent. The same run is charged once, whatever retries it."""
    now = services.now()
    cost = watch_budget.run_cost(request.suites, bench.dispatch.run_minutes)
    allowed = services.store.watch.charge(
        _charge_key(request),
        request.repo,
        watch_budget.day(now),
        request.trigger,
        level,
        cost,
        lambda spent: watch_budget.allows(level, spent, cost, bench.dispatch.budget),
        now,
        str(bench.dispatch.budget),
    )
    if not allowed:
        log.info(
            "default-branch run skipped for the budget",
            extra={
                "repo": request.repo,
                "correlation_id": request.correlation_id,
                "trigger": request.trigger,
            },
        )
    return allowed


def _look_for_run(github: GitHub, repo: str, workflow: str, correlation_id: str) -> WorkflowRun | None:
    for attempt in range(FIND_ATTEMPTS):
        run = github.find_run(repo, workflow, correlation_id)
        if run is not None or attempt == FIND_ATTEMPTS - 1:
            return run
        time.sleep(FIND_WAIT_S)  # GitHub lists a dispatched run a moment after accepting it
    return None


def _refusal_text(refused: DispatchRefused, workflow: str) -> str:
    why = {
        404: f"there is no workflow {workflow} on the default branch, or perfbot may not see it",
        422: f"the workflow {workflow} does not accept perfbot's inputs (does it declare them as "
        "workflow_dispatch inputs?)",
        403: "perfbot is not allowed to start workflows here (the App needs Actions: write), or "
        "GitHub's rate limit was reached",
    }.get(refused.status, "GitHub refused")
    return f"GitHub refused to start the benchmark workflow ({refused.status} {refused.message}): {why}"


def _save(services: Services, request: BenchRequest) -> BenchRequest:
    services.store.benchmarks.update(request)
    return request


def publish_check(
    services: Services, github: GitHub, request: BenchRequest, bench: BenchConfig
) -> BenchRequest:
    """Show where the request, as stored, stands in its check run on the head commit; the request,
    with its check run's id (stored when it is new: the only write here). A bisect has none: its
    case says where it stands (the dashboard), and its culprit's pull request hears of it."""
    if request.trigger == "bisect":
        return request
    results = services.store.benchmarks.results(request.id) if request.id is not None else []
    check = bench_report.check(request_section(request, results), request.correlation_id, bench.dispatch.gate)
    check_run_id = github.publish_check(request.repo, check, request.check_run_id)
    if check_run_id is not None and check_run_id != request.check_run_id:
        request = _save(services, replace(request, check_run_id=check_run_id))
    return request


def stop(
    services: Services, github: GitHub, request: BenchRequest, status: str, bench: BenchConfig
) -> BenchRequest:
    """Cancel a request that is not finished (its run too, when there is one), mark it ``status``
    (cancelled, or superseded by a newer push) and conclude its check run."""
    run_id = request.run_id
    if run_id is None and request.status != contract.REQUESTED:
        run = github.find_run(request.repo, bench.dispatch.workflow, request.correlation_id)
        run_id = run.id if run else None
    if run_id is not None:
        github.cancel_run(request.repo, run_id)
    # stored before its check run is published: a refused check run must not leave it active
    stopped = _save(services, replace(request, status=status, run_id=run_id, completed_at=services.now()))
    log.info(
        "benchmark stopped",
        extra={"repo": request.repo, "correlation_id": request.correlation_id, "status": status},
    )
    return publish_check(services, github, stopped, bench)


def active(services: Services, repo: str, number: int) -> list[BenchRequest]:
    return [r for r in services.store.benchmarks.for_pull(repo, number) if r.status in contract.ACTIVE]


# ---------------------------------------------------------------- the schedule


def scheduled_run(
    services: Services,
    github: GitHub,
    repo: str,
    installation_id: int | None,
    config: RepoConfig,
    branch: str,
    head: str,
) -> int:
    """A run of the default branch's head when the config's schedule says one is due (once per
    slot, within the budget); how many were started (0 or 1)."""
    now = services.now()
    slot = policy.schedule_slot(config.bench, now)
    if slot is None:
        return 0
    key = contract.work_key("schedule", repo, slot)
    if services.store.benchmarks.get(contract.correlation_id(key)) is not None:
        return 0
    parent = github.first_parent(repo, head)
    if parent is None:
        return 0
    request = new_request(
        services,
        key=key,
        repo=repo,
        installation_id=installation_id,
        number=None,
        base_sha=parent,
        head_sha=head,
        suites=contract.default_suites(config.bench),
        trigger="schedule",
    )
    if not within_budget(services, request, watch_budget.SCHEDULED, config.bench):
        return 0
    start(services, github, request, config.bench, branch)
    return 1
