"""What a benchmark says on GitHub besides the sticky comment: the `perfbot / bench` check run on
the head commit, in progress while the run runs and concluded once it ended."""

from __future__ import annotations

from bot.core.bench import contract
from bot.core.checks import Check, Conclusion
from bot.core.render import bench as render_bench
from bot.core.render.bench import BenchSection

CHECK_NAME = "perfbot / bench"
SUMMARY_BUDGET = 60_000


def check(section: BenchSection, correlation_id: str, gate: bool) -> Check:
    """Failure only for a confirmed regression where the config makes benchmarks a gate; a run that
    failed, timed out or could not start is neutral and verdictless (it says nothing about the
    change; a commit status shows it as an error), and a superseded or cancelled benchmark is
    cancelled."""
    title = render_bench.check_title(section)
    summary = render_bench.section_markdown(section)[:SUMMARY_BUDGET]
    if section.status in contract.ACTIVE:
        return Check(
            name=CHECK_NAME,
            head_sha=section.head_sha,
            status="in_progress",
            conclusion=None,
            title=title,
            summary=summary,
            details_url=section.run_url,
            external_id=correlation_id,
        )
    conclusion: Conclusion = "neutral"
    if section.status in (contract.SUPERSEDED, contract.CANCELLED):
        conclusion = "cancelled"
    elif section.status == contract.COMPLETED and section.verdict == "regression" and gate:
        conclusion = "failure"
    verdictless = section.status == contract.FAILED or (
        section.status == contract.COMPLETED and section.verdict in (None, "error")
    )
    return Check(
        name=CHECK_NAME,
        head_sha=section.head_sha,
        conclusion=conclusion,
        title=title,
        summary=summary,
        details_url=section.run_url,
        external_id=correlation_id,
        verdictless=verdictless,
    )
