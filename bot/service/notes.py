"""The last word on a delivery that failed every attempt: a visible note on its pull request (and,
for a benchmark run, the request marked failed), not only a log line."""

from __future__ import annotations

import logging
from dataclasses import replace

from bot.core.bench import contract
from bot.core.checks import Check
from bot.core.render import bench as render_bench

from . import events, runs
from .bench_section import SHOWN_TRIGGERS
from .records import BenchRequest
from .services import Services

log = logging.getLogger("perfbot.notes")


def delivery_failed(event: str, payload: dict, services: Services, error: Exception) -> None:
    """Tell the pull request the event was about that perfbot gave up on it; best effort, since
    whatever made the delivery fail may make this fail too."""
    try:
        found = _pull_request(event, payload, services)
        if found is None:
            return
        repo, number, installation = found
        github = services.github.for_installation(installation)
        github.reply(repo, number, render_bench.failure_note(event, type(error).__name__))
    except Exception:  # the note is a courtesy: its own failure is only logged
        log.exception("could not leave a note about a failed delivery", extra={"event": event})


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
        _give_up(services, request)
        if request.number is not None and request.trigger in SHOWN_TRIGGERS:
            return request.repo, request.number, request.installation_id
    return None


def _give_up(services: Services, request: BenchRequest) -> None:
    """A run's results that could not be processed: the request ends failed, its check neutral."""
    if request.status not in contract.ACTIVE:
        return
    failed = replace(request, status=contract.FAILED, completed_at=services.now(),
                     error="perfbot could not process the run's results")
    services.store.benchmarks.update(failed)
    github = services.github.for_installation(request.installation_id)
    github.publish_check(request.repo, Check(
        name="perfbot / bench", head_sha=request.head_sha, conclusion="neutral",
        title="perfbot could not process the results",
        summary="perfbot gave up processing this benchmark run's results; see the server's logs.",
        details_url=request.run_url, external_id=request.correlation_id), request.check_run_id)
