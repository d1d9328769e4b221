"""The per-round chart of a comparison: for each headline metric, every round pair's base and head
value in the order the pair ran (ABBA: base first, then head first, ...) and the metric's verdict.

Which side of a pair ran first is the order of the rounds in the results file (the order they
ran), not their indexes: the runner numbers each side's rounds by their pair, so both rounds of a
pair have one index.

The PR comment draws it as a Mermaid ``xychart-beta`` block, which GitHub renders inside the comment
(base as grey bars, head as a line in the verdict's colour: that chart type has no legend, so the
caption under it says which is which), on an axis from 0, so that a bar's height is its value and
a small change looks small. A pair with a failed round is not drawn (a bar has to have a height,
and any height would read as a measurement): the caption names it. Where no chart can be drawn (a
round pair or none with both sides measured) a sentence says so. The dashboard draws the same
`RoundChart` data with uPlot (`to_dict`; a failed round is a gap there). Metric names and units
come from the results file: they are reduced to characters that cannot end a Mermaid string or
the fenced block.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.core.judge.quantities import percent
from bot.core.judge.results import Results, Round
from bot.core.judge.stats import Comparison, MetricJudgement

MAX_CHARTS = 3
MAX_PAIRS = 30  # a wider x-axis is unreadable in a comment; the first pairs are drawn
MIN_PAIRS = 2
_UNSAFE = re.compile(r"[^A-Za-z0-9 _.,:/%+()\-]")


@dataclass(frozen=True)
class RoundChart:
    """One metric's round pairs: ``base[k]`` and ``head[k]`` of pair k (None: that round failed),
    ``base_first[k]``: whether base ran first in it. ``pairs`` counts every pair, drawn or not."""

    metric: str
    unit: str
    better: str
    verdict: str
    change: float | None
    base: tuple[float | None, ...]
    head: tuple[float | None, ...]
    base_first: tuple[bool, ...]
    pairs: int

    @property
    def labels(self) -> tuple[str, ...]:
        """'1 BH', '2 HB': the pair's number and which side ran first."""
        return tuple(f"{k + 1} {'BH' if first else 'HB'}" for k, first in enumerate(self.base_first))

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "unit": self.unit,
            "better": self.better,
            "verdict": self.verdict,
            "change": self.change,
            "labels": list(self.labels),
            "base": list(self.base),
            "head": list(self.head),
            "base_first": list(self.base_first),
            "pairs": self.pairs,
        }


def charted(comparison: Comparison) -> list[MetricJudgement]:
    """The metrics a chart is drawn for: those the suite calls its headline, else the first metric
    that decides the verdict (a suite without a headline), at most `MAX_CHARTS`."""
    headline = [m for m in comparison.metrics if m.role == "headline"]
    chosen = headline or [m for m in comparison.metrics if m.primary][:1]
    return chosen[:MAX_CHARTS]


def round_charts(results: Results, comparison: Comparison) -> list[RoundChart]:
    """A chart for each `charted` metric that has at least `MIN_PAIRS` pairs with both values."""
    charts = [round_chart(results, m) for m in charted(comparison)]
    return [c for c in charts if c is not None]


def charts_json(results: Results, comparison: Comparison) -> list[dict[str, Any]]:
    """The charts as the comparison's JSON carries them (``charts``), for the dashboard."""
    return [c.to_dict() for c in round_charts(results, comparison)]


def round_chart(results: Results, m: MetricJudgement) -> RoundChart | None:
    base, head = results.rounds_of("base"), results.rounds_of("head")
    pairs = min(len(base), len(head))
    shown = list(zip(base[:MAX_PAIRS], head[:MAX_PAIRS], strict=False))
    values = [(_value(b, m.name), _value(h, m.name)) for b, h in shown]
    if sum(1 for b, h in values if b is not None and h is not None) < MIN_PAIRS:
        return None
    ran = {id(round_): position for position, round_ in enumerate(results.rounds)}
    return RoundChart(
        m.name,
        m.unit,
        m.better,
        m.verdict,
        m.change,
        tuple(b for b, _ in values),
        tuple(h for _, h in values),
        tuple(ran[id(b)] < ran[id(h)] for b, h in shown),
        pairs,
    )


def no_chart(results: Results, comparison: Comparison) -> str:
    """The sentence in place of a chart that cannot be drawn: which metric, and how many round
    pairs with both sides measured it the run has of the `MIN_PAIRS` it takes; '' where every
    charted metric has its chart."""
    missing = [m for m in charted(comparison) if round_chart(results, m) is None]
    if not missing:
        return ""
    m = missing[0]
    base, head = results.rounds_of("base"), results.rounds_of("head")
    complete = sum(
        1
        for b, h in zip(base, head, strict=False)
        if _value(b, m.name) is not None and _value(h, m.name) is not None
    )
    pairs = f"{complete} such pair" + ("" if complete == 1 else "s")
    return (
        f"<sub>No per-round chart of `{_safe(m.name)}`: it takes at least {MIN_PAIRS} round pairs in "
        f"which both sides measured it, and this run has {pairs}.</sub>"
    )


def _value(round_: Round, metric: str) -> float | None:
    value = round_.metrics.get(metric) if round_.ok else None
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


# ---------------------------------------------------------------- Mermaid


def charts_markdown(charts: Sequence[RoundChart], collapsed: bool) -> str:
    """The charts as Mermaid blocks with their caption; inside a closed ``<details>`` when
    ``collapsed`` (a comparison that found no change keeps the comment short)."""
    if not charts:
        return ""
    blocks = [_mermaid(c) for c in charts]
    caption = (
        "<sub>Per round pair, in the order they ran (BH: base first, HB: head first): "
        "the grey bars are base, the line is head, on an axis from 0."
    )
    left_out = [c for c in charts if c.pairs > len(c.base)]
    if left_out:
        caption += f" The first {MAX_PAIRS} of {left_out[0].pairs} pairs are drawn."
    for c in charts:
        failed = [
            label for label, b, h in zip(c.labels, c.base, c.head, strict=True) if b is None or h is None
        ]
        if failed:
            which = ", ".join(failed[:10]) + (f" and {len(failed) - 10} more" if len(failed) > 10 else "")
            caption += (
                f" Not drawn{' for ' + _safe(c.metric) if len(charts) > 1 else ''}: pair"
                f"{'s' if len(failed) > 1 else ''} {which}, where a round failed (see the per-round values)."
            )
    body = "\n\n".join(blocks) + "\n\n" + caption + "</sub>"
    if collapsed:
        return f"<details><summary>Per-round chart</summary>\n\n{body}\n\n</details>"
    return body


def _mermaid(chart: RoundChart) -> str:
    drawn = [
        (label, b, h)
        for label, b, h in zip(chart.labels, chart.base, chart.head, strict=True)
        if b is not None and h is not None
    ]
    high = _top(max(max(b, h) for _, b, h in drawn))
    low = min(0.0, *(min(b, h) * 1.1 for _, b, h in drawn))  # 0, unless a value is below it
    unit = _safe(chart.unit) or "value"
    title = f"{_safe(chart.metric)} ({unit}, {chart.better} is better): {chart.verdict}" + (
        f" {percent(chart.change)}" if chart.change is not None and chart.verdict != "error" else ""
    )
    labels = ", ".join(f'"{label}"' for label, _, _ in drawn)
    return "\n".join(
        [
            "```mermaid",
            _palette(chart.verdict),
            "xychart-beta",
            f'    title "{_safe(title)}"',
            f'    x-axis "round pair" [{labels}]',
            f'    y-axis "{unit}" {_num(low)} --> {_num(high)}',
            f"    bar [{', '.join(_num(b) for _, b, _ in drawn)}]",
            f"    line [{', '.join(_num(h) for _, _, h in drawn)}]",
            "```",
        ]
    )


def _palette(verdict: str) -> str:
    """Base in grey; head in the verdict's colour (red: regression, green: improvement, else blue)."""
    head = {"regression": "#c62828", "improvement": "#2e7d32"}.get(verdict, "#1565c0")
    return f'%%{{init: {{"themeVariables": {{"xyChart": {{"plotColorPalette": "#90a4ae, {head}"}}}}}}}}%%'


def _top(high: float) -> float:
    """The axis' top: a tenth above the largest value (1 where every value is 0 or less)."""
    return high * 1.1 if high > 0 else 1.0


def _num(value: float) -> str:
    """Five significant digits, written without an exponent (Mermaid reads plain decimals)."""
    return f"{float(f'{value:.5g}'):.9f}".rstrip("0").rstrip(".")


def _safe(text: str) -> str:
    """Only characters that cannot close a Mermaid string, start a directive (%%) or a fence."""
    return re.sub("%+", "%", _UNSAFE.sub("", text.replace("±", "+-")))[:80].strip()
