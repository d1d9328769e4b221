"""A pull request's benchmark as the store knows it, turned into what the sticky comment and the
check run show (`bot.core.render.bench.BenchSection`)."""

from __future__ import annotations

import json

from bot.core.bench import contract
from bot.core.render.bench import BenchSection, SuiteResult
from bot.core.vocabulary import OUTDATED, PULL_REQUEST_TRIGGERS

from .ports.store import Store
from .records import BenchRequest, BenchResult

SHOWN_TRIGGERS = PULL_REQUEST_TRIGGERS  # merge and schedule runs belong to the default branch


def pull_section(store: Store, repo: str, number: int, head_sha: str | None) -> BenchSection | None:
    """The section of the pull request's newest benchmark (None when it never had one); a benchmark
    of another head than ``head_sha`` (the head now) is shown as superseded (if it was still
    running) or outdated."""
    newest = next((r for r in store.benchmarks.for_pull(repo, number) if r.trigger in SHOWN_TRIGGERS), None)
    if newest is None:
        return None
    section = request_section(newest, store.benchmarks.results(newest.id) if newest.id is not None else [])
    if head_sha is None or newest.head_sha == head_sha:
        return section
    if section.status not in (contract.SUPERSEDED, *contract.ACTIVE):
        return BenchSection(
            OUTDATED,
            newest.base_sha,
            newest.head_sha,
            newest.suites,
            newest.trigger,
            newest.requested_by,
            newest.run_url,
            newest.conclusion,
            None,
            section.results,
        )
    return BenchSection(
        contract.SUPERSEDED,
        newest.base_sha,
        newest.head_sha,
        newest.suites,
        newest.trigger,
        newest.requested_by,
        newest.run_url,
    )


def request_section(request: BenchRequest, results: list[BenchResult]) -> BenchSection:
    """What one request shows: its state, its suites' results, the problems on the way."""
    problems = tuple(line for line in (request.error or "").splitlines() if line.strip())
    error = problems[0] if problems and request.status == contract.FAILED and not request.conclusion else None
    return BenchSection(
        status=request.status,
        base_sha=request.base_sha,
        head_sha=request.head_sha,
        suites=request.suites,
        trigger=request.trigger,
        requested_by=request.requested_by,
        run_url=request.run_url,
        conclusion=request.conclusion,
        error=error,
        results=tuple(_suite_result(r) for r in results),
        problems=problems[1:] if error else problems,
    )


def _suite_result(result: BenchResult) -> SuiteResult:
    stored = json.loads(result.comparison)
    return SuiteResult(result.suite, result.verdict, stored.get("headline", ""), stored.get("markdown", ""))
