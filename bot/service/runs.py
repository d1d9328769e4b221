"""The `workflow_run` pipeline, for runs of the benchmark workflow: learn the run of a request when
the dispatch did not name it, and, once it completed, download its results artifact, judge it, store
it and report it (check run, and the sticky comment's benchmark section alone: the risk review above
it is the stored one, never scored again).

A run is matched to a request by the correlation id in its name, by the repository, and by the
workflow file the config names; only a `workflow_dispatch` run can match (`bot.service.events`
ignores the others). A run of another workflow, repository or trigger, or whose id differs from the
one the dispatch returned, is ignored. A completed run is handled once per run attempt, however
often its delivery (or a copy of its signed body) arrives.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from bot.core import stepmap
from bot.core.bench import artifact as results_artifact
from bot.core.bench import bisect_artifact, contract, judging
from bot.core.config.schema import RepoConfig
from bot.core.render.kernels import ChangedLines, changed_lines
from bot.core.text import clip, printable
from bot.core.watch import cases

from . import benchmarks, chain, repo_config, sticky, watch
from .bench_section import SHOWN_TRIGGERS
from .events import WorkflowRunEvent
from .failures import Permanent
from .ports.github import ArtifactInvalid, GitHub, PullRequestGone
from .ports.store import Store
from .records import BenchRequest, BenchResult, MetricPoint, StoredStepMap
from .services import Services

log = logging.getLogger("perfbot.runs")

MAX_DOWNLOAD = 50 * 2**20
_PROBLEMS_KEPT = 20


def wants(event: WorkflowRunEvent) -> bool:
    return True  # the event exists only for a dispatched run whose name carries a correlation id


def match(store: Store, event: WorkflowRunEvent) -> BenchRequest | None:
    """The request this run was dispatched for, or None (its workflow file is checked once the
    config is read: `_same_workflow`)."""
    repo = event.repo.full_name
    request = store.benchmarks.get(event.correlation_id)
    if request is None or request.repo != repo:
        log.info("workflow run of no request here; ignored", extra={"repo": repo, "run_id": event.run_id})
        return None
    if request.run_id is not None and request.run_id != event.run_id:
        log.warning(
            "a second run claims a request; ignored",
            extra={"repo": repo, "run_id": event.run_id, "correlation_id": event.correlation_id},
        )
        return None
    return request


def _same_workflow(event: WorkflowRunEvent, config: RepoConfig) -> bool:
    """Whether the run is of the workflow file the config dispatches (a run of another workflow
    could take the same name)."""
    expected = f".github/workflows/{config.bench.dispatch.workflow}"
    if event.path.split("@", 1)[0] == expected:
        return True
    log.warning(
        "a run of another workflow carries a request's name; ignored",
        extra={
            "repo": event.repo.full_name,
            "run_id": event.run_id,
            "path": clip(printable(event.path), 200),
        },
    )
    return False


def handle(event: WorkflowRunEvent, services: Services) -> None:
    request = match(services.store, event)
    if request is None:
        return
    if event.action == "completed":
        _completed(event, services, request)
    elif request.run_id is None and request.status in contract.ACTIVE:
        _started(event, services, request)


def _started(event: WorkflowRunEvent, services: Services, request: BenchRequest) -> None:
    """Link the run when the dispatch could not name it."""
    github = services.github.for_installation(request.installation_id)
    config = repo_config.read(github, request.repo, event.repo.default_branch)
    if not _same_workflow(event, config.config):
        return
    running = replace(request, status=contract.RUNNING, run_id=event.run_id, run_url=event.html_url)
    services.store.benchmarks.update(running)
    _show(services, github, running, config)


def _completed(event: WorkflowRunEvent, services: Services, request: BenchRequest) -> None:
    key = f"run:{request.repo}:{event.run_id}:{event.run_attempt}"
    if services.store.work.done(key):
        # Stored, perhaps cut short before its next step was queued: queued now (once, whatever
        # the replays), or nothing when it was.
        _next_step(event, services, request)
        log.info("run handled before; replay ignored", extra={"repo": request.repo, "run_id": event.run_id})
        return
    if request.status in (contract.CANCELLED, contract.SUPERSEDED):
        services.store.work.claim(key)  # the bot cancelled it and has said so
        return
    github = services.github.for_installation(request.installation_id)
    config = repo_config.read(github, request.repo, event.repo.default_branch)
    if not _same_workflow(event, config.config):
        return
    request = replace(request, run_id=event.run_id, run_url=event.html_url or request.run_url)
    if request.trigger == watch.BISECT_TRIGGER:
        _bisected(event, services, github, request, config.config, key)
        return
    finished, results, points, maps = _outcome(github, request, event.conclusion, services.now())
    stored_maps = [StoredStepMap(request.repo, event.repo.default_branch, m) for m in maps]
    if not services.store.benchmarks.complete(finished, results, points, key, stored_maps):
        return
    benchmarks.settle(services, finished, event.minutes)
    log.info(
        "benchmark finished",
        extra={
            "repo": request.repo,
            "correlation_id": request.correlation_id,
            "status": finished.status,
            "conclusion": finished.conclusion,
        },
    )
    _show(services, github, finished, config)
    _next_step(event, services, finished)


def _next_step(event: WorkflowRunEvent, services: Services, request: BenchRequest) -> None:
    """The watch's next step after a stored run (`bot.service.steps`): the look at a completed
    default-branch run's series; the naming of a bisect's confirmed culprit."""
    subject = None
    if request.trigger in ("merge", "schedule") and request.status == contract.COMPLETED:
        subject, action = request.correlation_id, chain.LOOK
    elif request.trigger == watch.BISECT_TRIGGER:
        case = services.store.watch.by_correlation(request.correlation_id)
        if case is not None and watch.unannounced(case):
            subject, action = case.key, chain.ANNOUNCE
    if subject is not None:
        step = chain.Step(
            action=action,
            repo=request.repo,
            installation_id=request.installation_id,
            default_branch=event.repo.default_branch,
            subject=subject,
        )
        chain.queue(services, step)


def _bisected(
    event: WorkflowRunEvent,
    services: Services,
    github: GitHub,
    request: BenchRequest,
    config: RepoConfig,
    key: str,
) -> None:
    """A bisect's run completed: its report read through the same checks as results (the
    artifact's name, size, archive), its case ended, then its request stored with the run's work
    key; the naming of a confirmed culprit is queued last (again on a replay, until it is)."""
    case = services.store.watch.by_correlation(request.correlation_id)
    problems: list[str] = []
    status = contract.COMPLETED if event.conclusion in ("success", "failure") else contract.FAILED
    if case is not None and case.state == cases.BISECTING:
        problems, outcome = _bisect_report(github, request, event.conclusion)
        case = watch.finished(services, request, outcome, problems, config, event.minutes)
        status = status if outcome is not None else contract.FAILED
    elif case is not None and case.state in watch.RELEASED:
        watch.settle_released(services, request)  # its reserve back, if its release did not give it
    done = replace(
        request,
        status=status,
        conclusion=event.conclusion or "failure",
        completed_at=services.now(),
        error=_join(problems) or None,
    )
    if services.store.benchmarks.complete(done, [], [], key):  # False on a replay: stored before
        _next_step(event, services, done)


def _bisect_report(
    github: GitHub, request: BenchRequest, conclusion: str | None
) -> tuple[list[str], bisect_artifact.BisectOutcome | None]:
    """The bisect's outcome (`bot.core.bench.bisect_artifact`), or what kept it from being read. A
    bisect that found no culprit or could not reproduce exits 1, so a failed run may carry a report."""
    problems, content = _download(github, request)
    if content is None:
        return problems, None
    outcome, found = bisect_artifact.read(
        content.files, good=request.base_sha, bad=request.head_sha, suite=request.suites[0]
    )
    problems += found
    if outcome is not None and outcome.culprit and not _within(github, request, outcome.culprit):
        # the report is written where the code under test ran: its own list of commits could be
        # forged too, so GitHub's history places the culprit
        problems.append(
            f"the report names {outcome.culprit[:12]}, which GitHub does not place in "
            f"{request.base_sha[:12]}..{request.head_sha[:12]}: no culprit is named"
        )
        outcome = None
    if outcome is None and conclusion != "success":
        problems.append(f"the bisect run concluded {conclusion or 'without a conclusion'}")
    return problems, outcome


def _within(github: GitHub, request: BenchRequest, culprit: str) -> bool:
    """Whether ``culprit`` lies in GOOD..BAD on GitHub: GOOD behind it, and it BAD or behind BAD."""
    after_good = github.compare(request.repo, request.base_sha, culprit)
    before_bad = github.compare(request.repo, culprit, request.head_sha)
    return (
        after_good is not None
        and after_good.status == "ahead"
        and before_bad is not None
        and before_bad.status in ("ahead", "identical")
    )


def _show(
    services: Services,
    github: GitHub,
    request: BenchRequest,
    config: repo_config.ConfigRead,
) -> None:
    """The request's check run, and for a pull request the sticky comment's benchmark section."""
    try:
        request = benchmarks.publish_check(services, github, request, config.config.bench)
    except PullRequestGone:  # stored: the dashboard has it, though GitHub no longer shows the repository
        log.info("repository gone; run not shown", extra={"repo": request.repo, "run_id": request.run_id})
        return
    if request.number is None or request.trigger not in SHOWN_TRIGGERS:
        return
    # The review above the section is the stored one: the `/bench` that asked for the run, or the
    # push before it, reviewed the head (a run's completion never scores a diff).
    sticky.write(services, github, request.repo, request.number, None)


def _outcome(
    github: GitHub, request: BenchRequest, conclusion: str | None, now: datetime
) -> tuple[BenchRequest, list[BenchResult], list[MetricPoint], list[stepmap.StepMap]]:
    """The request's final state, its results, history points and (of a default-branch run) the
    per-step maps of its commit. Only a successful run gives verdicts: a failed, cancelled or
    timed-out one is reported as such, with what its results file says went wrong, and never as
    'no regression'."""
    default_branch_run = request.trigger in ("merge", "schedule")
    subject = "This commit" if default_branch_run else "This PR"
    problems, judged, maps = _judged(github, request, subject)
    if conclusion != "success" or not judged.suites:
        lines = [*problems, *judged.problems, *judged.run_errors]
        if conclusion == "success" and not lines:
            lines = ["the run succeeded but no results file could be judged"]
        failed = replace(
            request,
            status=contract.FAILED,
            conclusion=conclusion or "failure",
            completed_at=now,
            error=_join(lines),
        )
        return failed, [], [], []
    results = [
        BenchResult(
            suite=s.suite,
            base_sha=request.base_sha,
            head_sha=request.head_sha,
            verdict=s.verdict,
            headline_metric=s.headline_metric,
            headline_change=s.headline_change,
            comparison=s.to_json(),
            on_default_branch=default_branch_run,
        )
        for s in judged.suites
    ]
    points = (
        [
            MetricPoint(s.suite, name, unit, better, request.head_sha, value)
            for s in judged.suites
            for name, unit, better, value in s.points
        ]
        if default_branch_run
        else []
    )
    done = replace(
        request,
        status=contract.COMPLETED,
        conclusion=conclusion,
        completed_at=now,
        error=_join(judged.problems) or None,
    )
    return done, results, points, maps if default_branch_run else []


def _judged(
    github: GitHub, request: BenchRequest, subject: str
) -> tuple[list[str], judging.Judged, list[stepmap.StepMap]]:
    """Download and judge the request's artifact; what went wrong on the way, the judgement, and
    the per-step maps of the run's commits its results files hold. A download the storage refuses
    (`ArtifactUnavailable`) propagates: the delivery is tried again."""
    problems, content = _download(github, request)
    if content is None:
        return problems, judging.Judged((), ()), []
    judged = judging.judge(content, request.base_sha, request.head_sha, request.suites, subject)
    if judged.names_launching_lines():  # the pull request's diff is read only to mark them
        judged = judging.judge(
            content,
            request.base_sha,
            request.head_sha,
            request.suites,
            subject,
            _changed_lines(github, request),
        )
    return [], judged, _step_maps(request, content)


def _download(github: GitHub, request: BenchRequest) -> tuple[list[str], results_artifact.Artifact | None]:
    """The request's artifact, found by its name, within the size limits, read as untrusted input;
    or what went wrong."""
    wanted = contract.artifact_name(request.correlation_id)
    found = next((a for a in github.artifacts(request.repo, request.run_id or 0) if a.name == wanted), None)
    if found is None:
        return [f"the run uploaded no artifact named {wanted}"], None
    if found.expired:
        return [f"the artifact {wanted} has expired"], None
    if found.size > MAX_DOWNLOAD:
        return [f"the artifact is {found.size:,} bytes; at most {MAX_DOWNLOAD:,} are downloaded"], None
    try:
        data = github.download_artifact(request.repo, found.id, MAX_DOWNLOAD)
        return [], results_artifact.read(data)
    except (ArtifactInvalid, results_artifact.ArtifactError) as error:
        return [clip(printable(str(error)), 300)], None


def _step_maps(request: BenchRequest, content: results_artifact.Artifact) -> list[stepmap.StepMap]:
    """The per-step maps in the artifact's results files that profiled one of the run's commits
    (the base side is the one profiled), one per suite; a map that does not read, or of another
    commit, is left out (and logged)."""
    maps: dict[str, stepmap.StepMap] = {}
    for name in sorted(content.files):
        if not judging.is_results_file(name):
            continue
        try:
            found = stepmap.from_results(json.loads(content.files[name]))
        except (ValueError, RecursionError) as error:  # JSONDecodeError and StepMapError are ValueErrors
            log.warning(
                "a step map that does not read; not stored",
                extra={"repo": request.repo, "file": name, "error": clip(printable(str(error)), 200)},
            )
            continue
        if found is not None and found.commit in (request.base_sha.lower(), request.head_sha.lower()):
            maps.setdefault(found.suite, found)
    return list(maps.values())


def _changed_lines(github: GitHub, request: BenchRequest) -> ChangedLines | None:
    """The lines the pull request changed, which the kernel diff marks where they launched a kernel;
    None for a run on the default branch, or where the pull request's head is no longer the commit
    measured (its diff would mark lines the run never saw), or it cannot be read. Only the head's
    lines: the diff's old side is the merge base, which need not be the base measured."""
    if request.number is None:
        return None
    try:
        if github.pull(request.repo, request.number).head_sha != request.head_sha:
            return None
        return changed_lines(github.pull_diff(request.repo, request.number), base_numbers=False)
    except Permanent as error:
        log.info("no changed lines for the kernel diff of %s#%s: %s", request.repo, request.number, error)
        return None


def _join(lines: Sequence[str]) -> str:
    return "\n".join(clip(printable(line), 300) for line in lines[:_PROBLEMS_KEPT])
