"""What a benchmark says on GitHub besides the sticky comment: the `perfbot / bench` check run on
the head commit, in progress while the run runs and concluded once it ended."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.core.bench import contract
from bot.core.render import bench as render_bench
from bot.core.render.bench import BenchSection

CHECK_NAME = "perfbot / bench"
SUMMARY_BUDGET = 60_000


@dataclass(frozen=True)
class Check:
    """The check run of one request; ``conclusion`` is None while it is in progress."""

    name: str
    head_sha: str
    status: Literal["in_progress", "completed"]
    conclusion: Literal["failure", "neutral", "cancelled"] | None
    title: str
    summary: str
    details_url: str | None
    external_id: str


def check(section: BenchSection, correlation_id: str, gate: bool) -> Check:
    """Failure only for a confirmed regression where the config makes benchmarks a gate; a run that
    failed, was cancelled or timed out is neutral (it says nothing about the change), and a
    superseded or cancelled benchmark is cancelled."""
    title = render_bench.check_title(section)
    summary = render_bench.section_markdown(section)[:SUMMARY_BUDGET]
    if section.status in contract.ACTIVE:
        return Check(CHECK_NAME, section.head_sha, "in_progress", None, title, summary, section.run_url,
                     correlation_id)
    conclusion: Literal["failure", "neutral", "cancelled"] = "neutral"
    if section.status in (contract.SUPERSEDED, contract.CANCELLED):
        conclusion = "cancelled"
    elif section.status == contract.COMPLETED and section.verdict == "regression" and gate:
        conclusion = "failure"
    return Check(CHECK_NAME, section.head_sha, "completed", conclusion, title, summary, section.run_url,
                 correlation_id)
