"""`workflow_run` events of the benchmark workflow: learn the run of a request when the dispatch
did not name it, and, once it completed, download its results artifact, judge it, store it and
report it (check run, sticky comment; for the default branch, the history points).

A run is matched to a request by the correlation id in its name and by the repository, and only a
`workflow_dispatch` run can match: a run of any other workflow, repository or trigger, or whose id
differs from the one the dispatch returned, is ignored. A completed run is handled once per run
attempt, however often its delivery (or a copy of its signed body) arrives.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from bot.core.bench import artifact as results_artifact
from bot.core.bench import contract, judging
from bot.core.text import clip, printable

from . import bench, review
from .ports import BenchRequest, BenchResult, GitHub, MetricPoint, PullRequestGone, Store
from .router import Router
from .services import Services

router = Router()
log = logging.getLogger("perfbot.runs")

MAX_DOWNLOAD = 50 * 2**20
_PROBLEMS_KEPT = 20


def _dispatched_run(payload: dict) -> bool:
    run = payload.get("workflow_run") or {}
    title = run.get("display_title")
    return run.get("event") == "workflow_dispatch" and contract.correlation_in(title) is not None


def match(store: Store, payload: dict) -> BenchRequest | None:
    """The request this run was dispatched for, or None."""
    run, repo = payload["workflow_run"], payload["repository"]["full_name"]
    correlation = contract.correlation_in(run.get("display_title"))
    if correlation is None or run.get("event") != "workflow_dispatch":
        return None
    request = store.bench_request(correlation)
    if request is None or request.repo != repo:
        log.info("workflow run of no request here; ignored", extra={"repo": repo, "run_id": run.get("id")})
        return None
    if request.run_id is not None and request.run_id != run["id"]:
        log.warning("a second run claims a request; ignored", extra={"repo": repo, "run_id": run["id"],
                                                                     "correlation_id": correlation})
        return None
    return request


@router.register("workflow_run", "requested", when=_dispatched_run)
@router.register("workflow_run", "in_progress", when=_dispatched_run)
def on_started(payload: dict, services: Services) -> None:
    """Link the run when the dispatch could not name it."""
    request = match(services.store, payload)
    if request is None or request.run_id is not None or request.status not in contract.ACTIVE:
        return
    run = payload["workflow_run"]
    github = services.github.for_installation(request.installation_id)
    config, _ = _config(github, request, payload)
    running = replace(request, status=contract.RUNNING, run_id=run["id"], run_url=run.get("html_url"))
    services.store.update_bench_request(running)
    try:
        bench.publish(services, github, running, config, payload["repository"]["default_branch"])
    except PullRequestGone:
        log.info("repository gone; run not shown", extra={"repo": request.repo, "run_id": run["id"]})


@router.register("workflow_run", "completed", when=_dispatched_run)
def on_completed(payload: dict, services: Services) -> None:
    request = match(services.store, payload)
    if request is None:
        return
    run = payload["workflow_run"]
    key = f"run:{request.repo}:{run['id']}:{run.get('run_attempt') or 1}"
    if services.store.work_done(key):
        log.info("run handled before; replay ignored", extra={"repo": request.repo, "run_id": run["id"]})
        return
    if request.status in (contract.CANCELLED, contract.SUPERSEDED):
        services.store.claim_work(key)  # the bot cancelled it and has said so
        return
    github = services.github.for_installation(request.installation_id)
    config, _ = _config(github, request, payload)
    request = replace(request, run_id=run["id"], run_url=run.get("html_url") or request.run_url)
    finished, results, points = _outcome(github, request, run.get("conclusion"), services.now())
    if not services.store.complete_bench_request(finished, results, points, key):
        return
    log.info("benchmark finished", extra={"repo": request.repo, "correlation_id": request.correlation_id,
                                          "status": finished.status, "conclusion": finished.conclusion})
    try:
        bench.publish(services, github, finished, config, payload["repository"]["default_branch"])
    except PullRequestGone:  # stored: the dashboard has it, though GitHub no longer shows the repository
        log.info("repository gone; result not shown", extra={"repo": request.repo, "run_id": run["id"]})


def _config(github: GitHub, request: BenchRequest, payload: dict):
    default_branch = payload["repository"]["default_branch"]
    ref = review.PullRef(request.repo, request.number or 0, request.head_sha, default_branch, "", None)
    return review.default_branch_config(github, ref)


def _outcome(github: GitHub, request: BenchRequest, conclusion: str | None, now: datetime
             ) -> tuple[BenchRequest, list[BenchResult], list[MetricPoint]]:
    """The request's final state, its results and history points. Only a successful run gives
    verdicts: a failed, cancelled or timed-out one is reported as such, with what its results file
    says went wrong, and never as 'no regression'."""
    default_branch_run = request.trigger in ("merge", "schedule")
    subject = "This commit" if default_branch_run else "This PR"
    problems, judged = _judged(github, request, subject)
    if conclusion != "success" or not judged.suites:
        lines = [*problems, *judged.problems, *judged.run_errors]
        if conclusion == "success" and not lines:
            lines = ["the run succeeded but no results file could be judged"]
        failed = replace(request, status=contract.FAILED, conclusion=conclusion or "failure",
                         completed_at=now, error=_join(lines))
        return failed, [], []
    results = [BenchResult(s.suite, request.base_sha, request.head_sha, s.verdict, s.headline_metric,
                           s.headline_change, s.to_json(), default_branch_run) for s in judged.suites]
    points = [MetricPoint(s.suite, name, unit, better, request.head_sha, value)
              for s in judged.suites for name, unit, better, value in s.points] if default_branch_run else []
    done = replace(request, status=contract.COMPLETED, conclusion=conclusion, completed_at=now,
                   error=_join(judged.problems) or None)
    return done, results, points


def _judged(github: GitHub, request: BenchRequest, subject: str) -> tuple[list[str], judging.Judged]:
    """Download and judge the request's artifact; what went wrong on the way, and the judgement."""
    nothing = judging.Judged((), ())
    wanted = contract.artifact_name(request.correlation_id)
    found = next((a for a in github.artifacts(request.repo, request.run_id or 0) if a.name == wanted), None)
    if found is None:
        return [f"the run uploaded no artifact named {wanted}"], nothing
    if found.expired:
        return [f"the artifact {wanted} has expired"], nothing
    if found.size > MAX_DOWNLOAD:
        return [f"the artifact is {found.size:,} bytes; at most {MAX_DOWNLOAD:,} are downloaded"], nothing
    try:
        data = github.download_artifact(request.repo, found.id, MAX_DOWNLOAD)
        content = results_artifact.read(data)
    except (ValueError, results_artifact.ArtifactError) as error:
        return [clip(printable(str(error)), 300)], nothing
    return [], judging.judge(content, request.base_sha, request.head_sha, request.suites, subject)


def _join(lines: Sequence[str]) -> str:
    return "\n".join(clip(printable(line), 300) for line in lines[:_PROBLEMS_KEPT])
