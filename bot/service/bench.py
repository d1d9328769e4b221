"""Benchmarks on the GPU runners: record a request, dispatch the workflow exactly once, follow it
with a `perfbot / bench` check run and the sticky comment's benchmark section, supersede it on a
new push, cancel it; and the runs nobody asks for (risky pushes, merges, the schedule).

Exactly once: a request is stored under a correlation id derived from its work key before GitHub
hears of it, and marked ``dispatching`` just before the dispatch. A retry (a crash, a timeout, a
replayed delivery) finds the request; if it was dispatching, it looks the run up by its correlation
id before it would dispatch again.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from bot.core.bench import contract, policy
from bot.core.bench import report as bench_report
from bot.core.config.schema import RepoConfig
from bot.core.review import plan as reviewing

from . import bench_state, review
from .ports import (
    BenchCheck,
    BenchRequest,
    DispatchRefused,
    GitHub,
    PullInfo,
    PullRequestGone,
    Store,
    WorkflowRun,
)
from .router import Router
from .services import Services

router = Router()
log = logging.getLogger("perfbot.bench")

FIND_ATTEMPTS = 4  # looking for a run whose dispatch may have reached GitHub before a crash
FIND_WAIT_S = 2.0


@dataclass(frozen=True)
class Ask:
    """A benchmark to run: what to measure, why, and the work key that makes it happen once."""

    repo: str
    installation_id: int | None
    number: int | None
    base_sha: str
    head_sha: str
    suites: tuple[str, ...]
    rounds: int | None
    max_rounds: int | None
    trigger: contract.Trigger
    key: str
    requested_by: str | None = None
    comment_id: int | None = None


def start(services: Services, github: GitHub, ask: Ask, config: RepoConfig,
          default_branch: str) -> BenchRequest:
    """Record the request, then dispatch it, unless this work was recorded before: then carry on
    from where it stood (a request already dispatched is returned as it is)."""
    fresh = BenchRequest(
        correlation_id=contract.correlation_id(ask.key), repo=ask.repo, installation_id=ask.installation_id,
        number=ask.number, base_sha=ask.base_sha, head_sha=ask.head_sha, suites=ask.suites,
        rounds=ask.rounds, max_rounds=ask.max_rounds, trigger=ask.trigger, requested_by=ask.requested_by,
        comment_id=ask.comment_id, status=contract.REQUESTED, created_at=services.now())
    request, _ = services.store.open_bench_request(fresh)
    return resume(services, github, request, config, default_branch)


def resume(services: Services, github: GitHub, request: BenchRequest, config: RepoConfig,
           default_branch: str) -> BenchRequest:
    """Dispatch a recorded request that is not yet dispatched (or may not be); leave any other as it is."""
    if request.status not in (contract.REQUESTED, contract.DISPATCHING):
        log.info("benchmark requested before; not dispatched again", extra={
            "repo": request.repo, "correlation_id": request.correlation_id, "status": request.status})
        return request
    return _dispatch(services, github, request, config, default_branch)


def _dispatch(services: Services, github: GitHub, request: BenchRequest, config: RepoConfig,
              default_branch: str) -> BenchRequest:
    workflow = config.bench.dispatch.workflow
    run = None
    if request.status == contract.DISPATCHING:  # sent before, then lost: did it reach GitHub?
        run = _look_for_run(github, request.repo, workflow, request.correlation_id)
    else:
        request = _save(services.store, replace(request, status=contract.DISPATCHING))
    if run is None:
        inputs = contract.inputs(request.number, request.base_sha, request.head_sha, request.suites,
                                 request.rounds, request.max_rounds, request.correlation_id)
        try:
            run = github.dispatch(request.repo, workflow, default_branch, inputs)
        except DispatchRefused as refused:
            failed = replace(request, status=contract.FAILED, completed_at=services.now(),
                             error=_refusal_text(refused, workflow))
            log.warning("dispatch refused", extra={"repo": request.repo, "status": refused.status,
                                                   "correlation_id": request.correlation_id})
            return publish(services, github, _save(services.store, failed), config, default_branch)
        if run is None:  # no run details (older GitHub Enterprise Server): its list names it
            run = github.find_run(request.repo, workflow, request.correlation_id)
    running = replace(request, status=contract.RUNNING, run_id=run.id if run else None,
                      run_url=run.html_url if run else None)
    log.info("benchmark dispatched", extra={"repo": request.repo, "correlation_id": request.correlation_id,
                                            "run_id": running.run_id, "trigger": request.trigger})
    return publish(services, github, _save(services.store, running), config, default_branch)


def _look_for_run(github: GitHub, repo: str, workflow: str, correlation_id: str) -> WorkflowRun | None:
    for attempt in range(FIND_ATTEMPTS):
        run = github.find_run(repo, workflow, correlation_id)
        if run is not None or attempt == FIND_ATTEMPTS - 1:
            return run
        time.sleep(FIND_WAIT_S)  # GitHub lists a dispatched run a moment after accepting it
    return None


def _refusal_text(refused: DispatchRefused, workflow: str) -> str:
    why = {404: f"there is no workflow {workflow} on the default branch, or perfbot may not see it",
           422: f"the workflow {workflow} does not accept perfbot's inputs (does it declare them as "
                "workflow_dispatch inputs?)",
           403: "perfbot is not allowed to start workflows here (the App needs Actions: write), or "
                "GitHub's rate limit was reached"}.get(refused.status, "GitHub refused")
    return f"GitHub refused to start the benchmark workflow ({refused.status} {refused.message}): {why}"


def _save(store: Store, request: BenchRequest) -> BenchRequest:
    store.update_bench_request(request)
    return request


def publish(services: Services, github: GitHub, request: BenchRequest, config: RepoConfig,
            default_branch: str) -> BenchRequest:
    """Show where the request stands: its check run on the head commit and, for a pull request,
    the sticky comment's benchmark section. The request, with its check run's id."""
    request = _publish_check(services, github, request, config)
    if request.number is not None and request.trigger in bench_state.SHOWN_TRIGGERS:
        refresh_comment(services, github, request.repo, request.number, request.installation_id,
                        default_branch)
    return request


def _publish_check(services: Services, github: GitHub, request: BenchRequest,
                   config: RepoConfig) -> BenchRequest:
    results = services.store.bench_results(request.id) if request.id is not None else []
    section = bench_state.section_of(request, results)
    check = bench_report.check(section, request.correlation_id, config.bench.dispatch.gate)
    check_run_id = github.publish_bench_check(request.repo, BenchCheck(
        check.name, check.head_sha, check.status, check.conclusion, check.title, check.summary,
        check.details_url, check.external_id, request.check_run_id))
    if check_run_id is not None and check_run_id != request.check_run_id:
        request = _save(services.store, replace(request, check_run_id=check_run_id))
    return request


def refresh_comment(services: Services, github: GitHub, repo: str, number: int, installation_id: int | None,
                    default_branch: str) -> None:
    """Write the sticky comment again, its risk review and its benchmark section, for the pull
    request's head now."""
    try:
        pull = github.pull(repo, number)
        ref = review.PullRef(repo, number, pull.head_sha, default_branch, pull.html_url, installation_id)
        section = bench_state.section_for(services.store, repo, number, pull.head_sha)
        facts = review.gather(github, ref, section)
        comment = reviewing.plan(facts).comment
        github.upsert_comment(repo, number, comment.marker, comment.body, create=comment.create)
    except PullRequestGone:
        log.info("pull request gone; comment not updated", extra={"repo": repo, "pr": number})


def stop(services: Services, github: GitHub, request: BenchRequest, status: str, config: RepoConfig,
         default_branch: str, refresh: bool = True) -> BenchRequest:
    """Cancel a request that is not finished (its run too, when there is one), mark it ``status``
    (cancelled, or superseded by a newer push) and conclude its check run; ``refresh``: write the
    sticky comment again too."""
    run_id = request.run_id
    if run_id is None and request.status != contract.REQUESTED:
        run = github.find_run(request.repo, config.bench.dispatch.workflow, request.correlation_id)
        run_id = run.id if run else None
    if run_id is not None:
        github.cancel_run(request.repo, run_id)
    stopped = _save(services.store, replace(request, status=status, run_id=run_id,
                                            completed_at=services.now()))
    log.info("benchmark stopped", extra={"repo": request.repo, "correlation_id": request.correlation_id,
                                         "status": status})
    if refresh:
        return publish(services, github, stopped, config, default_branch)
    _publish_check(services, github, stopped, config)
    return stopped


def active(store: Store, repo: str, number: int) -> list[BenchRequest]:
    return [r for r in store.bench_requests(repo, number) if r.status in contract.ACTIVE]


def supersede(services: Services, github: GitHub, repo: str, number: int, head_sha: str,
              config: RepoConfig, default_branch: str) -> int:
    """Cancel the pull request's benchmarks of other heads than ``head_sha``; how many."""
    older = [r for r in active(services.store, repo, number) if r.head_sha != head_sha]
    for request in older:
        stop(services, github, request, contract.SUPERSEDED, config, default_branch, refresh=False)
    return len(older)


# ---------------------------------------------------------------- runs nobody asks for


@router.register("pull_request", "opened")
@router.register("pull_request", "synchronize")
@router.register("pull_request", "reopened")
def on_push(payload: dict, services: Services) -> None:
    """A new head supersedes the older head's benchmark; a risky head of a trusted author is
    benchmarked at once. Runs after the review, whose record gives the head's risk; reads the
    config only when there is something to decide with it."""
    pr, repo = payload["pull_request"], payload["repository"]
    if pr.get("state") != "open":
        return
    name, number, default_branch = repo["full_name"], pr["number"], repo["default_branch"]
    installation = (payload.get("installation") or {}).get("id")
    try:
        github = services.github.for_installation(installation)
        pull = github.pull(name, number)
        if pull.head_sha != pr["head"]["sha"]:
            return  # a newer push's event does this
        config = _config_once(github, name, number, pull.head_sha, default_branch)
        older = [r for r in active(services.store, name, number) if r.head_sha != pull.head_sha]
        if older:
            supersede(services, github, name, number, pull.head_sha, config(), default_branch)
        if _wanted(services, github, pull, config):
            key = contract.work_key("auto", name, f"{number}:{pull.head_sha}")
            suites = contract.default_suites(config().bench)
            start(services, github, Ask(name, installation, number, pull.base_sha, pull.head_sha, suites,
                                        None, None, "auto", key), config(), default_branch)
        elif older:
            refresh_comment(services, github, name, number, installation, default_branch)
    except PullRequestGone:
        log.info("pull request gone; no benchmark", extra={"repo": name, "pr": number})


def _wanted(services: Services, github: GitHub, pull: PullInfo, config: Callable[[], RepoConfig]) -> bool:
    """Whether the head is benchmarked without asking; the cheap reasons not to come first."""
    reviewed = services.store.review_for(pull.repo, pull.number)
    if pull.draft or pull.fork or reviewed is None or reviewed.head_sha != pull.head_sha:
        return False
    if reviewed.level == "none":
        return False
    permission = _author_permission(github, pull.repo, pull.author)
    return permission in policy.WRITE and policy.auto(reviewed.level, permission, pull.fork, config().bench)


def _config_once(github: GitHub, repo: str, number: int, head_sha: str,
                 default_branch: str) -> Callable[[], RepoConfig]:
    """The default branch's config, read on first use."""

    @functools.cache
    def read() -> RepoConfig:
        config, _ = review.default_branch_config(github, _ref(repo, number, head_sha, default_branch))
        return config

    return read


def _author_permission(github: GitHub, repo: str, author: str) -> str:
    return github.permission(repo, author) if author else "none"


def _ref(repo: str, number: int, head_sha: str, default_branch: str) -> review.PullRef:
    return review.PullRef(repo, number, head_sha, default_branch, "", None)


@router.register("pull_request", "closed")
def on_closed(payload: dict, services: Services) -> None:
    """A closed pull request's benchmarks are cancelled; a merge that was risky enough gets a run of
    its merge commit against the first parent, for the default branch's history."""
    pr, repo = payload["pull_request"], payload["repository"]
    name, number, default_branch = repo["full_name"], pr["number"], repo["default_branch"]
    installation = (payload.get("installation") or {}).get("id")
    running = active(services.store, name, number)
    merge_sha = pr.get("merge_commit_sha")
    merged = bool(pr.get("merged") and isinstance(merge_sha, str) and contract.SHA.fullmatch(merge_sha))
    reviewed = services.store.review_for(name, number)
    level = reviewed.level if reviewed is not None and reviewed.head_sha == pr["head"]["sha"] else None
    if not running and not (merged and level not in (None, "none")):
        return  # nothing to cancel, nothing to measure: no need to ask GitHub anything
    github = services.github.for_installation(installation)
    try:
        ref = _ref(name, number, pr["head"]["sha"], default_branch)
        config, _ = review.default_branch_config(github, ref)
        for request in running:
            stop(services, github, request, contract.CANCELLED, config, default_branch, refresh=False)
        if not merged or not policy.on_merge(level, config.bench):
            return
        parent = github.first_parent(name, merge_sha)
        if parent is None:
            return
        suites = contract.default_suites(config.bench)
        start(services, github, Ask(name, installation, None, parent, merge_sha, suites, None, None, "merge",
                                    contract.work_key("merge", name, merge_sha), requested_by=f"#{number}"),
              config, default_branch)
    except PullRequestGone:
        log.info("repository gone; closed pull request left as it is", extra={"repo": name, "pr": number})


def scheduled(services: Services) -> int:
    """The hourly sweep: a run of each watched repository's default branch head when its config's
    schedule says one is due (once per slot); how many were started."""
    started = 0
    for repository in services.store.repositories():
        try:
            started += _scheduled_run(services, repository.full_name, repository.installation_id,
                                      services.now())
        except Exception:  # one repository's trouble must not stop the others'
            log.exception("scheduled benchmark failed", extra={"repo": repository.full_name})
    return started


def _scheduled_run(services: Services, repo: str, installation_id: int | None, now: datetime) -> int:
    github = services.github.for_installation(installation_id)
    branch, head = github.default_branch(repo)
    config, _ = review.default_branch_config(github, _ref(repo, 0, head, branch))
    slot = policy.schedule_slot(config.bench, now)
    if slot is None:
        return 0
    key = contract.work_key("schedule", repo, slot)
    if services.store.bench_request(contract.correlation_id(key)) is not None:
        return 0
    parent = github.first_parent(repo, head)
    if parent is None:
        return 0
    suites = contract.default_suites(config.bench)
    ask = Ask(repo, installation_id, None, parent, head, suites, None, None, "schedule", key)
    start(services, github, ask, config, branch)
    return 1
