"""The Markdown summary of a results file's rounds, for ``$GITHUB_STEP_SUMMARY`` (medians, ranges, CV
per side); `perfbot bench run` appends it as the rounds go.

It describes what was measured; verdicts belong to `perfbot compare`. Text that came from outside
(metric names, error messages, the machine's names) is escaped, since a suite's output is untrusted.
"""

from __future__ import annotations

import statistics
from typing import Any, TypedDict

from bot.core.judge.results import SIDES, MetricSpec, Results
from bot.core.render.markdown import code, escape_md
from bot.core.text import clip


class Spread(TypedDict):
    median: float
    min: float
    max: float
    cv: float
    n: int


def spread(samples: list[float]) -> Spread | None:
    """Median, range and coefficient of variation (stdev / mean) of one side's round values."""
    if not samples:
        return None
    mean = statistics.fmean(samples)
    cv = statistics.stdev(samples) / mean if len(samples) > 1 and mean else 0.0
    return Spread(
        median=statistics.median(samples), min=min(samples), max=max(samples), cv=cv, n=len(samples)
    )


def markdown(results: Results) -> str:
    base, head = results.base, results.head
    same = base.sha == head.sha
    title = f"### perfbot bench: `{code(results.suite)}`" + (" (A/A: noise run)" if same else "")
    lines = [
        title,
        "",
        f"base `{base.sha[:10]}` vs head `{head.sha[:10]}`, status **{results.status}**, "
        f"{rounds_line(results)}",
        "",
    ]
    if results.metrics:
        lines += [
            "| metric | base median | head median | head/base | base range | head range "
            "| base CV | head CV |",
            "|---|---:|---:|---:|---|---|---:|---:|",
        ]
        lines += [metric_row(results, name, spec) for name, spec in results.metrics.items()]
        lines.append("")
    lines += failure_lines(results)
    machine = machine_line(base.fingerprint)
    if machine:
        lines += [f"Machine: {machine}", ""]
    lines += [
        "Verdicts (regression, improvement, unchanged) come from `perfbot compare` on the results file.",
        "",
    ]
    return "\n".join(lines)


def rounds_line(results: Results) -> str:
    parts = []
    for side in SIDES:
        rounds = results.rounds_of(side)
        parts.append(f"{side} {len(rounds) - len(results.failures(side))}/{len(rounds)} rounds ok")
    return ", ".join(parts)


def metric_row(results: Results, name: str, spec: MetricSpec) -> str:
    base, head = (spread(results.values(side, name)) for side in SIDES)
    unit = f" {escape_md(spec.unit)}" if spec.unit else ""
    ratio = f"{head['median'] / base['median']:.3f}" if base and head and base["median"] else "–"
    better = "↓" if spec.better == "lower" else "↑"
    return (
        f"| {escape_md(name)} ({better}) | {median(base, unit)} | {median(head, unit)} "
        f"| {ratio} | {span(base)} | {span(head)} | {percent(base)} | {percent(head)} |"
    )


def median(stats: Spread | None, unit: str) -> str:
    return f"{stats['median']:.4g}{unit}" if stats else "–"


def span(stats: Spread | None) -> str:
    return f"{stats['min']:.4g} – {stats['max']:.4g}" if stats else "–"


def percent(stats: Spread | None) -> str:
    return f"{100 * stats['cv']:.2f}%" if stats and stats["n"] > 1 else "–"


def failure_lines(results: Results) -> list[str]:
    failed = [(r.side, r.index, r.error) for r in results.rounds if not r.ok] + [
        (w.side, "warm-up", w.error) for w in results.warmups if not w.ok
    ]
    lines = [f"- {side} round {index}: {_message(error or 'failed')}" for side, index, error in failed[:10]]
    if len(failed) > 10:
        lines.append(f"- … and {len(failed) - 10} more")
    if results.error:
        lines.insert(0, f"**Stopped:** {_message(results.error)}")
    return [*lines, ""] if lines else []


def _message(text: str) -> str:
    return escape_md(clip(text, 300))


def machine_line(fingerprint: dict[str, Any]) -> str:
    gpus = fingerprint.get("gpus") or []
    torch = fingerprint.get("torch") or {}
    parts = []
    if gpus:
        parts.append(f"{len(gpus)} × {escape_md(str(gpus[0].get('name', 'GPU')))}")
    if fingerprint.get("driver"):
        parts.append(f"driver {escape_md(str(fingerprint['driver']))}")
    for label, key in (("torch", "version"), ("CUDA", "cuda"), ("NCCL", "nccl")):
        if torch.get(key):
            parts.append(f"{label} {escape_md(str(torch[key]))}")
    if fingerprint.get("cpu", {}).get("model"):
        parts.append(escape_md(str(fingerprint["cpu"]["model"])))
    return ", ".join(parts)
