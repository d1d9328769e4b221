"""The last word on a delivery that failed every attempt: a visible note on its pull request (and,
for a benchmark run, the request marked failed), not only a log line."""

from __future__ import annotations

import logging
from dataclasses import replace

from bot.core.bench import contract
from bot.core.render import bench as render_bench

from . import runs
from .ports import BenchCheck
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
    installation = (payload.get("installation") or {}).get("id")
    repo = (payload.get("repository") or {}).get("full_name")
    if not isinstance(repo, str):
        return None
    if event in ("pull_request", "pull_request_review"):
        return repo, payload["pull_request"]["number"], installation
    if event == "issue_comment" and (payload.get("issue") or {}).get("pull_request"):
        return repo, payload["issue"]["number"], installation
    if event == "workflow_run":
        request = runs.match(services.store, payload)
        if request is None:
            return None
        _give_up(services, request)
        if request.number is not None and request.trigger in ("command", "auto"):
            return request.repo, request.number, request.installation_id
    return None


def _give_up(services: Services, request) -> None:
    """A run's results that could not be processed: the request ends failed, its check neutral."""
    if request.status not in contract.ACTIVE:
        return
    failed = replace(request, status=contract.FAILED, completed_at=services.now(),
                     error="perfbot could not process the run's results")
    services.store.update_bench_request(failed)
    github = services.github.for_installation(request.installation_id)
    github.publish_bench_check(request.repo, BenchCheck(
        "perfbot / bench", request.head_sha, "completed", "neutral", "perfbot could not process the results",
        "perfbot gave up processing this benchmark run's results; see the server's logs.", request.run_url,
        request.correlation_id, request.check_run_id))
