"""Regressions on the default branch, applied: open a case when a merge or scheduled run finished
(its confirmed regression, or a change point of the series its points extend), bisect it on the
GPU runners within the daily budget, read the bisect's artifact back, and name the culprit on its
pull request (or commit), and in an issue when the config asks.

Every step can be cut short by a kill and done again: a case is opened once per change (its key),
moved only by conditional updates, its budget charged once per bisect (the bisect's correlation
id), and its bisect dispatched exactly once through the benchmark requests' own machinery
(`bot.service.benchmarks`). Decisions are the core's (`bot.core.watch`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from bot.core.bench import contract
from bot.core.bench.bisect_artifact import BisectOutcome
from bot.core.config.schema import RepoConfig
from bot.core.text import clip, printable
from bot.core.watch import budget, opening, report
from bot.core.watch import cases as states
from bot.core.watch.cases import Span

from . import benchmarks
from .ports.github import GitHub, PullRequestGone
from .ports.store import Cooldowns
from .records import BenchRequest, BenchResult, RegressionCase
from .services import Services

Refusal = TypeVar("Refusal")

log = logging.getLogger("perfbot.watch")

BISECT_TRIGGER = "bisect"


@dataclass(frozen=True)
class Looked:
    """What a look at a run's series leaves for the next steps: the cases to bisect (each still
    active case of the suites looked at, those an earlier attempt left too), and the superseded
    cases whose bisect is to be stopped (`release`)."""

    dispatch: tuple[str, ...] = ()
    release: tuple[str, ...] = ()


# ---------------------------------------------------------------- opening cases


def look(services: Services, request: BenchRequest) -> Looked:
    """Look at a finished merge or scheduled run: every primary metric of every suite is a series
    of its own; the cases the run opens, moves, widens or ends (`bot.core.watch.opening`). Reads
    and writes the store alone (the next steps talk to GitHub). Safe to repeat."""
    if request.id is None or request.trigger not in ("merge", "schedule"):
        return Looked()
    repo, store = request.repo, services.store
    number = _merged_number(request)
    dispatch: dict[str, None] = {}
    release: dict[str, None] = {}
    for result in store.benchmarks.results(request.id):
        primaries, looks = _primaries(result)
        # One change, one case: the run's regressions of several metrics are one (its first
        # regressed metric in the comparison's order, the headline first, carries it).
        for m in primaries:
            found = opening.from_merge_run(
                repo,
                result.suite,
                m.name,
                result.base_sha,
                result.head_sha,
                m.verdict,
                m.change,
                m.p_value,
                looks,
            )
            if found is not None:
                _open(services, request, found, number=number)
                break
        for m in primaries:
            release.update(dict.fromkeys(_series(services, request, result.suite, m.name, len(primaries))))
        # Every case of the suite still open goes on to its dispatch, those of this look and those
        # an earlier attempt opened and was cut short before queueing (its retry decides nothing new).
        for case in store.watch.of_series(repo, result.suite, None, (states.DETECTED, states.BISECTING)):
            dispatch[case.key] = None
    return Looked(tuple(dispatch), tuple(release))


class _RunMetric(NamedTuple):
    """One primary metric of a run's comparison, as the watch reads it."""

    name: str
    verdict: str
    change: float | None
    p_value: float | None  # adjusted over the run's primary metrics; None when not recorded


def _primaries(result: BenchResult) -> tuple[list[_RunMetric], int]:
    """The metrics of a suite's comparison that decide its verdict (not its diagnostics), each with
    its own verdict, change and p-value, and the looks the run took (an adaptive run's); the
    headline alone, without a p-value, when the comparison lists none."""
    try:
        comparison = json.loads(result.comparison)
        metrics, method = comparison.get("metrics") or [], comparison.get("method") or {}
    except (ValueError, AttributeError):
        metrics, method = [], {}
    found = [
        _RunMetric(
            str(m["name"]), str(m.get("verdict") or ""), _change(m.get("ratio")), _number(m.get("p_value"))
        )
        for m in metrics
        if isinstance(m, dict) and m.get("name") and m.get("role") != "diagnostic"
    ]
    if not found and result.headline_metric:
        found = [_RunMetric(result.headline_metric, result.verdict, result.headline_change, None)]
    looks = method.get("looks") if isinstance(method, dict) else None
    return found, looks if isinstance(looks, int) and not isinstance(looks, bool) and looks > 0 else 1


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _change(ratio: object) -> float | None:
    number = _number(ratio)
    return None if number is None else number - 1


def _series(services: Services, request: BenchRequest, suite: str, metric: str, metrics: int) -> list[str]:
    """One series looked at again with its new point: its established changes and what they do
    to the cases it has (gather, decide in the core, apply); the keys of the bisecting cases it
    superseded."""
    store, repo = services.store.watch, request.repo
    rows = store.series(repo, suite, metric)
    if not rows:
        return []
    points = [opening.SeriesPoint(r.sha, r.base_sha, r.value) for r in rows]
    better = rows[-1].better
    found = opening.established(repo, suite, metric, better, points, metrics=metrics)
    # The suite's cases of every metric: a change that several metrics show at once is one case
    known = [
        opening.KnownCase(c.key, _span(c), c.source, c.state)
        for c in store.of_series(repo, suite, None, states.KNOWN)
    ]
    return [
        decision.key
        for decision in opening.decide(found, known, points, better, metric=metric)
        if _apply(services, request, decision) and isinstance(decision, opening.Move | opening.Widen)
    ]


def _apply(services: Services, request: BenchRequest, decision: opening.Decision) -> bool:
    """Apply one decision of the core; whether it superseded a bisecting case (whose range did
    not hold the change: a wider one does), which is then to be released."""
    store, now = services.store.watch, services.now()
    if isinstance(decision, opening.Recover):
        note = "the series came back within noise of its level before the change: nothing to bisect"
        store.move(decision.key, states.RECOVERED, states.OPEN, now, note=note)
        log.info("regression case recovered", extra={"repo": request.repo, "case": decision.key})
        return False
    case = _new_case(services, request, decision.found)
    if isinstance(decision, opening.Open):
        _opened(services, case)
        return False
    old = store.get(decision.key)
    case, moved = store.supersede(decision.key, case)
    log.info(
        "regression case moved" if isinstance(decision, opening.Move) else "regression case widened",
        extra={"repo": request.repo, "case": decision.key, "to": case.key},
    )
    return moved and old is not None and old.state == states.BISECTING


def _open(
    services: Services, request: BenchRequest, found: opening.Found, *, number: int | None
) -> RegressionCase:
    return _opened(services, replace(_new_case(services, request, found), number=number))


def _opened(services: Services, case: RegressionCase) -> RegressionCase:
    stored, new = services.store.watch.open(case)
    if new:
        log.info("regression case opened", extra={"repo": case.repo, "case": case.key, "source": case.source})
    return stored


def _new_case(services: Services, request: BenchRequest, found: opening.Found) -> RegressionCase:
    span = found.span
    return RegressionCase(
        key=span.key(),
        repo=span.repo,
        suite=span.suite,
        metric=span.metric,
        good_sha=span.good,
        bad_sha=span.bad,
        source=found.source,
        state=states.DETECTED,
        installation_id=request.installation_id,
        detected_at=services.now(),
        change=found.change,
    )


def open_by_hand(
    services: Services,
    repo: str,
    installation_id: int | None,
    good: str,
    bad: str,
    suites: Sequence[str],
    metric: str,
    requested_by: str,
    number: int,
    refuse: Callable[[Cooldowns], Refusal | None] = lambda _cooldowns: None,
) -> tuple[Refusal | None, list[RegressionCase]]:
    """`/bench bisect GOOD BAD` on pull request ``number``: the case of that span for each of
    ``suites`` (the one there is, when it is known), opened in the command's admission unless
    ``refuse``, given the cooldowns as they are in it, says why not; the refusal, or the cases."""
    cases = [
        RegressionCase(
            key=Span(repo, suite, metric, good, bad).key(),
            repo=repo,
            suite=suite,
            metric=metric,
            good_sha=good,
            bad_sha=bad,
            source="command",
            state=states.DETECTED,
            installation_id=installation_id,
            detected_at=services.now(),
            requested_by=requested_by,
            number=number,
        )
        for suite in suites
    ]

    def decide(cooldowns: Cooldowns) -> tuple[Refusal | None, bool]:
        refusal = refuse(cooldowns)
        return refusal, refusal is None

    refusal, opened = services.store.watch.open_by_command(repo, number, requested_by, cases, decide)
    return refusal, [case for case, _ in opened]


def started_reply(started: list[tuple[str, RegressionCase]]) -> str:
    """The reply to `/bench bisect`: where each suite's case stands."""
    lines = ["**perfbot bisect**", ""]
    for suite, case in started:
        where = states.LABELS.get(case.state, case.state)
        run = f" ([run]({case.run_url}))" if case.run_url else ""
        note = f": {report.escape_md(case.note)}" if case.note and case.state != states.BISECTING else ""
        span = f"{report.code(case.good_sha[:12])}..{report.code(case.bad_sha[:12])}"
        lines.append(f"- {report.code(suite)} {span}: {where}{run}{note}")
    lines += [
        "",
        "A confirmed culprit is named on its pull request (or commit); `/bench cancel` stops the "
        "bisects asked for here.",
    ]
    return "\n".join(lines)


def single_commit_reply(good: str, bad: str, number: int | None) -> str:
    """The reply to `/bench bisect` over a range that holds one commit: nothing to bisect."""
    brought = f", brought by #{number}" if number is not None else ""
    measure = f"`/bench` on #{number}" if number is not None else "`/bench` on its pull request"
    return "\n".join(
        [
            "**perfbot bisect**",
            "",
            f"{report.code(good[:12])}..{report.code(bad[:12])} holds one commit, "
            f"{report.code(bad[:12])}{brought}: there is nothing to bisect, and no GPU was spent. "
            f"If the metric changed over this range, that commit changed it; {measure} measures it "
            "against its base.",
        ]
    )


def _span(case: RegressionCase) -> Span:
    return Span(case.repo, case.suite, case.metric, case.good_sha, case.bad_sha)


def _merged_number(request: BenchRequest) -> int | None:
    """The pull request a merge run is of (its requester is written ``#N``)."""
    who = request.requested_by or ""
    return int(who[1:]) if request.trigger == "merge" and who[1:].isdigit() and who.startswith("#") else None


# ---------------------------------------------------------------- bisecting


def bisect_key(case: RegressionCase) -> str:
    return contract.work_key("bisect", case.repo, case.key)


def bisect(
    services: Services, github: GitHub, case: RegressionCase, config: RepoConfig, default_branch: str
) -> RegressionCase:
    """Dispatch the case's bisect, once: charge the budget (once per bisect), move the case to
    bisecting (once), record and dispatch its request (once). A case already bisecting whose
    request never reached GitHub (a kill between the steps) is carried on from where it stood."""
    store, now = services.store, services.now()
    correlation = contract.correlation_id(bisect_key(case))
    if case.state == states.BISECTING:
        return _carry_on(services, github, case, config, default_branch)
    if case.state not in states.OPEN:
        return case
    if not config.bench.watch.bisect:
        return case
    refused = _refused_inputs(case)
    if refused is not None:  # nothing charged, nothing dispatched: the case says why
        return store.watch.move(case.key, states.FAILED, states.OPEN, now, note=refused) or case
    dispatch = config.bench.dispatch
    cost = budget.bisect_cost(budget.BISECT_RUNS_RESERVED, dispatch.run_minutes)
    allowed = store.watch.charge(
        _charge_key(correlation, now),
        case.repo,
        budget.day(now),
        "bisect",
        budget.BISECT,
        cost,
        lambda spent: budget.allows(budget.BISECT, spent, cost, dispatch.budget),
        now,
        str(dispatch.budget),
    )
    if not allowed:
        skipped = store.watch.move(
            case.key,
            states.OUT_OF_BUDGET,
            (states.DETECTED,),
            now,
            note=f"today's GPU budget ({dispatch.budget} minutes) leaves less "
            f"than the {cost:g} minutes a bisect is counted as",
        )
        log.info("bisect skipped for the budget", extra={"repo": case.repo, "case": case.key})
        return skipped or store.watch.get(case.key) or case
    moved = store.watch.move(
        case.key,
        states.BISECTING,
        states.sources_of(states.BISECTING),
        now,
        correlation_id=correlation,
        gpu_minutes=cost,
        note=None,
        finished_at=None,
    )
    if moved is None:  # another process moved it first: it carries on from there
        return store.watch.get(case.key) or case
    return _carry_on(services, github, moved, config, default_branch)


def _refused_inputs(case: RegressionCase) -> str | None:
    """Why the bisect's dispatch would be refused before it reaches GitHub (None: it would not):
    checked before anything is charged or moved, so that such a case fails at once instead of
    holding a reserve and a bisecting state for good."""
    try:
        contract.bisect_inputs(case.good_sha, case.bad_sha, case.suite, case.metric, None, None, "x")
    except ValueError as error:
        return clip(printable(f"the bisect cannot be dispatched: {error}"), 1000)
    return None


def release(
    services: Services,
    github: GitHub,
    case: RegressionCase,
    config: RepoConfig,
    why: str = contract.SUPERSEDED,
) -> None:
    """A bisect that will not report (its case was widened, cancelled or dismissed): its run stopped as
    ``why`` (superseded, cancelled) when one is running, and its reserve given back to today's
    budget."""
    if case.correlation_id is None:
        return
    request = services.store.benchmarks.get(case.correlation_id)
    if request is not None and request.status in contract.ACTIVE:
        benchmarks.stop(services, github, request, why, config.bench)
    when = request.created_at if request is not None else services.now()
    services.store.watch.settle(_charge_key(case.correlation_id, when), 0.0)


# A case whose bisect was stopped before it reported: its reserve is owed back.
RELEASED = (states.SUPERSEDED, states.DISMISSED, states.CANCELLED)


def settle_released(services: Services, request: BenchRequest) -> None:
    """A bisect's run that ended after its case was superseded, dismissed or cancelled: its
    reserve given back (again, if its release came first: settling is idempotent), whatever was
    cut short between the case's move and its release."""
    services.store.watch.settle(_charge_key(request.correlation_id, request.created_at), 0.0)


def _charge_key(correlation: str, at: datetime) -> str:
    """A bisect's charge, once per day: skipped for the budget today, it may be charged tomorrow
    (the hourly sweep tries it again); the request is recorded at the charge's moment, so its
    time names the charge to settle."""
    return f"budget:{correlation}:{budget.day(at)}"


def _carry_on(
    services: Services, github: GitHub, case: RegressionCase, config: RepoConfig, default_branch: str
) -> RegressionCase:
    """Record and dispatch a bisecting case's request (or resume it); one already running is left."""
    key = bisect_key(case)
    request = services.store.benchmarks.get(contract.correlation_id(key))
    if request is None:
        request = benchmarks.new_request(
            services,
            key=key,
            repo=case.repo,
            installation_id=case.installation_id,
            number=None,
            base_sha=case.good_sha,
            head_sha=case.bad_sha,
            suites=(case.suite,),
            trigger="bisect",
            requested_by=case.requested_by or "perfbot",
        )
        request = benchmarks.start(services, github, request, config.bench, default_branch)
    else:
        request = benchmarks.resume(services, github, request, config.bench, default_branch)
    if request.status == contract.FAILED:
        ended = services.store.watch.move(
            case.key,
            states.FAILED,
            (states.BISECTING,),
            services.now(),
            note=clip(printable(request.error or "the bisect failed"), 1000),
            gpu_minutes=0.0,
        )
        if ended is not None:  # never dispatched: its reserve goes back to today's budget
            services.store.watch.settle(_charge_key(request.correlation_id, request.created_at), 0.0)
        return ended or case
    if request.run_url and request.run_url != case.run_url:
        services.store.watch.note(case.key, run_url=request.run_url)
        case = replace(case, run_url=request.run_url)
    return case


def sweep(services: Services, github: GitHub, repo: str, config: RepoConfig, default_branch: str) -> int:
    """The hourly sweep's second chance: cases skipped for the budget (a new day has a new budget,
    a bisect that reported early frees some), bisecting cases whose request never reached GitHub
    (the job that was to dispatch it failed for good), and confirmed culprits not yet named (the
    job that was to name them failed for good); how many bisects were dispatched now."""
    dispatched = 0
    waiting = services.store.watch.cases(frozenset({repo}))
    for case in sorted(waiting, key=lambda c: (c.detected_at, c.key)):  # the oldest first
        if unannounced(case):
            announce(services, github, case, config)
            continue
        if case.state == states.BISECTING:
            request = services.store.benchmarks.get(contract.correlation_id(bisect_key(case)))
            if request is not None and request.status not in (contract.REQUESTED, contract.DISPATCHING):
                continue
        elif case.state != states.OUT_OF_BUDGET:
            continue
        if bisect(services, github, case, config, default_branch).state == states.BISECTING:
            dispatched += 1
    return dispatched


def cancel(services: Services, github: GitHub, case: RegressionCase, config: RepoConfig, by: str) -> bool:
    """Stop a case (and its bisect's run): `/bench cancel`. Whether it was stopped now."""
    moved = services.store.watch.move(
        case.key,
        states.CANCELLED,
        states.sources_of(states.CANCELLED),
        services.now(),
        note=f"cancelled by {clip(printable(by), 100)}",
    )
    if moved is None:
        return False
    release(services, github, case, config, contract.CANCELLED)  # its run stopped, its reserve back
    return True


def dismiss(
    services: Services, github: GitHub, case: RegressionCase, config: RepoConfig, by: str, reason: str
) -> RegressionCase | None:
    """`/bench dismiss`: end a case a maintainer calls noise (or known), its bisect's run stopped and
    its reserve given back; None when it had ended already."""
    note = f"dismissed by {clip(printable(by), 100)}" + (
        f": {clip(printable(reason), 300)}" if reason else ""
    )
    moved = services.store.watch.move(
        case.key, states.DISMISSED, states.sources_of(states.DISMISSED), services.now(), note=note
    )
    if moved is not None and case.state == states.BISECTING:
        release(services, github, case, config, contract.CANCELLED)
    return moved


# ---------------------------------------------------------------- the bisect's report


def finished(
    services: Services,
    request: BenchRequest,
    outcome: BisectOutcome | None,
    problems: list[str],
    config: RepoConfig,
    minutes: float | None = None,
) -> RegressionCase | None:
    """End the bisecting case of ``request`` with what its report says (None: no report could be
    read; the case fails with ``problems``). The budget's charge is settled to the runner time its
    workflow run took (``minutes``), or where GitHub did not say, to the runs made."""
    case = services.store.watch.by_correlation(request.correlation_id)
    if case is None:
        return None
    now, run_minutes, measured = services.now(), config.bench.dispatch.run_minutes, minutes
    changes: dict[str, object]
    if outcome is None:
        # No report: the runner time it took, where GitHub said, is all it is charged
        services.store.watch.settle(_charge_key(request.correlation_id, request.created_at), measured or 0.0)
        note = clip(printable("; ".join(problems) or "no report"), 1000)
        state, changes = states.FAILED, {"note": note, "gpu_minutes": measured or 0.0}
    else:
        state = states.after_bisect(outcome.status, outcome.reference_verdict)
        spent = measured if measured is not None else budget.bisect_cost(outcome.runs, run_minutes)
        services.store.watch.settle(_charge_key(request.correlation_id, request.created_at), spent)
        merge = services.store.watch.merge_of(case.repo, outcome.culprit) if outcome.culprit else None
        changes = {
            "culprit_sha": outcome.culprit if state == states.CONFIRMED else None,
            "culprit_subject": outcome.culprit_subject,
            "gpu_minutes": spent,
            "culprit_number": merge[0] if merge and state == states.CONFIRMED else None,
            "outcome": json.dumps(_outcome_json(outcome)),
            "note": clip(printable("; ".join(problems)), 1000) or None,
        }
    moved = services.store.watch.move(
        case.key, state, (states.BISECTING,), now, run_url=request.run_url, **changes
    )
    if moved is not None:
        log.info("bisect finished", extra={"repo": case.repo, "case": case.key, "state": state})
    return moved or services.store.watch.get(case.key)


def _outcome_json(outcome: BisectOutcome) -> dict[str, Any]:
    """What the case's page and comment show of the bisect (the reader's outcome, as JSON)."""
    data = asdict(outcome)
    data["ci"] = list(outcome.ci) if outcome.ci else None
    return data


def unannounced(case: RegressionCase) -> bool:
    """A confirmed culprit not yet named, or without an issue (which its config may want)."""
    confirmed = case.state == states.CONFIRMED and bool(case.culprit_sha) and bool(case.outcome)
    return confirmed and (case.comment_url is None or case.issue_number is None)


def announce(services: Services, github: GitHub, case: RegressionCase, config: RepoConfig) -> RegressionCase:
    """Name a confirmed culprit on the pull request that brought it (or on its commit), once per
    culprit; and in the issue when ``bench.watch.issue`` asks (updated, never a second one). Safe
    to repeat, also after a worker died between GitHub's answer and storing it: the comment and the
    issue are found by their markers, not created again."""
    culprit_sha = case.culprit_sha
    if not unannounced(case) or culprit_sha is None:  # (None: for the type checker)
        return case
    culprit = _culprit(services, case)
    body = report.culprit_comment(culprit)
    named = services.store.watch.of_culprit(case.repo, culprit_sha)
    url = case.comment_url
    if url is None:
        # Once per culprit: another case that found the same commit (another metric, a second
        # `/bench bisect` of it) has named it already.
        url = next((c.comment_url for c in named if c.comment_url and c.key != case.key), None)
    if url is None:
        url = _name_on_github(services, github, case, culprit_sha, body)
    if url != case.comment_url:
        services.store.watch.note(case.key, comment_url=url)
        case = replace(case, comment_url=url)
    if config.bench.watch.issue and case.issue_number is None:
        # One issue per culprit: a second regression it caused (another suite or metric) updates it.
        known = next((c.issue_number for c in named if c.issue_number is not None), None)
        number = github.upsert_issue(
            case.repo,
            known,
            report.issue_title(case.suite, case.metric, culprit.culprit),
            report.issue_body(culprit, url),
            report.issue_marker(culprit.culprit),
        )
        services.store.watch.note(case.key, issue_number=number)
        case = replace(case, issue_number=number)
    return case


def _name_on_github(
    services: Services, github: GitHub, case: RegressionCase, culprit_sha: str, body: str
) -> str:
    """The comment naming the culprit: on the pull request that brought it into the default
    branch (its merge commit, or a commit inside a pull request merged with a merge commit), else
    on the commit; its address."""
    pull = services.store.watch.merge_of(case.repo, culprit_sha) or github.pull_of_commit(
        case.repo, culprit_sha
    )
    if pull is not None:
        number, pr_url = pull
        try:
            comment_id = github.upsert_comment(case.repo, number, report.marker(case.key), body)
        except PullRequestGone:
            pass
        else:
            if case.culprit_number != number:
                services.store.watch.note(case.key, culprit_number=number)
            return f"{pr_url or ''}#issuecomment-{comment_id}"
    return github.comment_on_commit(case.repo, culprit_sha, report.marker(case.key), body)


def _culprit(services: Services, case: RegressionCase) -> report.Culprit:
    found = json.loads(case.outcome or "{}")
    ci = found.get("ci")
    found_by = None
    if case.source == "merge":
        request = services.store.benchmarks.get(
            contract.correlation_id(contract.work_key("merge", case.repo, case.bad_sha))
        )
        found_by = request.run_url if request else None
    return report.Culprit(
        key=case.key,
        suite=case.suite,
        metric=case.metric or found.get("metric") or "",
        good=case.good_sha,
        bad=case.bad_sha,
        source=case.source,
        culprit=case.culprit_sha or "",
        subject=found.get("culprit_subject"),
        change=found.get("change"),
        ci=(float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 else None,
        commits=int(found.get("commits") or 0),
        runs=int(found.get("runs") or 0),
        run_url=case.run_url,
        found_by_url=found_by,
        kernels_markdown=found.get("kernels_markdown"),
    )
