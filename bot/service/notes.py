"""The last word on a delivery that failed for good: the benchmark request it was to dispatch
released, if it never reached GitHub, and a visible note on its pull request (and, for a benchmark
run, the request marked failed), not only a log line."""

from __future__ import annotations

import logging
from dataclasses import replace

from bot.core.bench import contract
from bot.core.checks import Check
from bot.core.render import bench as render_bench
from bot.core.render.markdown import code

from . import events, runs
from .bench_section import SHOWN_TRIGGERS
from .commands import REPLY_MARKER
from .pull_requests import NEW_HEADS
from .records import BenchRequest
from .services import Services

log = logging.getLogger("perfbot.notes")


def release(event: str, payload: dict, services: Services, error: Exception) -> BenchRequest | None:
    """End the benchmark request that the failed delivery was to dispatch (a `/bench`, or the
    automatic run of a push), if it never reached GitHub: stored failed in one conditional update,
    it no longer counts as running nor for the cooldowns. The request released, if one was."""
    try:
        parsed = events.parse(event, payload)
    except events.MalformedPayload:
        return None  # nothing in it can be trusted to name a request
    if isinstance(parsed, events.CommandEvent):
        key = contract.work_key("command", parsed.repo.full_name, parsed.subject)
    elif isinstance(parsed, events.PullRequestEvent) and parsed.action in NEW_HEADS:
        key = contract.work_key("auto", parsed.repo.full_name, f"{parsed.number}:{parsed.head_sha}")
    else:
        return None
    try:
        released = services.store.benchmarks.release(
            contract.correlation_id(key),
            f"perfbot gave up starting this benchmark ({type(error).__name__})",
            services.now(),
        )
    except Exception:  # the database may be what failed: the request then waits for a /bench cancel
        log.exception("could not release a failed delivery's benchmark request", extra={"event": event})
        return None
    if released is not None:
        log.warning(
            "benchmark request released: its delivery failed for good",
            extra={"repo": released.repo, "correlation_id": released.correlation_id},
        )
    return released


def delivery_failed(
    event: str,
    payload: dict,
    services: Services,
    error: Exception,
    released: BenchRequest | None = None,
    retried: bool = True,
) -> None:
    """Tell the pull request the event was about that perfbot gave up on it: that the benchmark it
    asked for could not be started (``released``), else, after every attempt failed (``retried``),
    that the event could not be processed. Best effort, since whatever made the delivery fail may
    make this fail too."""
    try:
        if released is not None:
            if released.number is not None:
                github = services.github.for_installation(released.installation_id)
                github.reply(released.repo, released.number, _not_started(released, type(error).__name__))
            return
        if not retried:
            return
        found = _pull_request(event, payload, services)
        if found is None:
            return
        repo, number, installation = found
        github = services.github.for_installation(installation)
        github.reply(repo, number, render_bench.failure_note(event, type(error).__name__))
    except Exception:  # the note is a courtesy: its own failure is only logged
        log.exception("could not leave a note about a failed delivery", extra={"event": event})


def _not_started(request: BenchRequest, error: str) -> str:
    """The note on a benchmark request released before it reached GitHub (carrying the marker of
    the bot's replies, so that it is never read as a command)."""
    what = "asked for with `/bench`" if request.trigger == "command" else "of this push"
    return (
        f"{REPLY_MARKER}\n⚠️ **The benchmark of `{code(request.head_sha[:12])}` {what} could not be "
        f"started:** perfbot gave up on it (`{code(error[:80])}`). Nothing is running, and "
        "`/bench` may be used again."
    )


def _pull_request(event: str, payload: dict, services: Services) -> tuple[str, int, int | None] | None:
    try:
        parsed = events.parse(event, payload)
    except events.MalformedPayload:
        return None  # nothing in it can be trusted to name a pull request
    if isinstance(parsed, (events.PullRequestEvent, events.CommandEvent)):
        return parsed.repo.full_name, parsed.number, parsed.repo.installation_id
    if isinstance(parsed, events.WorkflowRunEvent):
        request = runs.match(services.store, parsed)
        if request is None:
            return None
        _give_up(services, request, parsed.run_id)
        if request.number is not None and request.trigger in SHOWN_TRIGGERS:
            return request.repo, request.number, request.installation_id
    return None


def _give_up(services: Services, request: BenchRequest, run_id: int) -> None:
    """A run's results that could not be processed: the request ends failed (with its run: it ran,
    and the cooldowns count it), its check neutral."""
    if request.status not in contract.ACTIVE:
        return
    failed = replace(
        request,
        status=contract.FAILED,
        run_id=request.run_id or run_id,
        completed_at=services.now(),
        error="perfbot could not process the run's results",
    )
    services.store.benchmarks.update(failed)
    github = services.github.for_installation(request.installation_id)
    github.publish_check(
        request.repo,
        Check(
            name="perfbot / bench",
            head_sha=request.head_sha,
            conclusion="neutral",
            title="perfbot could not process the results",
            summary="perfbot gave up processing this benchmark run's results; see the server's logs.",
            details_url=request.run_url,
            external_id=request.correlation_id,
        ),
        request.check_run_id,
    )
