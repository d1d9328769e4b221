"""The per-round chart of a comparison: for each headline metric, every round pair's base and head
value in the order the pair ran (ABBA: base first, then head first, ...) and the metric's verdict.

The PR comment draws it as a Mermaid ``xychart-beta`` block, which GitHub renders inside the comment
(base as grey bars, head as a line in the verdict's colour: that chart type has no legend, so the
caption under it says which is which); the dashboard draws the same `RoundChart` data with uPlot
(`to_dict`). Metric names and units come from the results file: they are reduced to characters
that cannot end a Mermaid string or the fenced block.
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
    return RoundChart(
        m.name,
        m.unit,
        m.better,
        m.verdict,
        m.change,
        tuple(b for b, _ in values),
        tuple(h for _, h in values),
        tuple(b.index < h.index for b, h in shown),
        pairs,
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
        "the grey bars are base, the line is head."
    )
    left_out = [c for c in charts if c.pairs > len(c.base)]
    if left_out:
        caption += f" The first {MAX_PAIRS} of {left_out[0].pairs} pairs are drawn."
    if any(None in c.base or None in c.head for c in charts):
        caption += " A failed round is drawn at the axis' lower end."
    body = "\n\n".join(blocks) + "\n\n" + caption + "</sub>"
    if collapsed:
        return f"<details><summary>Per-round chart</summary>\n\n{body}\n\n</details>"
    return body


def _mermaid(chart: RoundChart) -> str:
    present = [v for v in chart.base + chart.head if v is not None]
    low, high = _axis(min(present), max(present))
    unit = _safe(chart.unit) or "value"
    title = f"{_safe(chart.metric)} ({unit}, {chart.better} is better): {chart.verdict}" + (
        f" {percent(chart.change)}" if chart.change is not None and chart.verdict != "error" else ""
    )
    labels = ", ".join(f'"{label}"' for label in chart.labels)
    return "\n".join(
        [
            "```mermaid",
            _palette(chart.verdict),
            "xychart-beta",
            f'    title "{_safe(title)}"',
            f'    x-axis "round pair" [{labels}]',
            f'    y-axis "{unit}" {_num(low)} --> {_num(high)}',
            f"    bar [{', '.join(_num(low if v is None else v) for v in chart.base)}]",
            f"    line [{', '.join(_num(low if v is None else v) for v in chart.head)}]",
            "```",
        ]
    )


def _palette(verdict: str) -> str:
    """Base in grey; head in the verdict's colour (red: regression, green: improvement, else blue)."""
    head = {"regression": "#c62828", "improvement": "#2e7d32"}.get(verdict, "#1565c0")
    return f'%%{{init: {{"themeVariables": {{"xyChart": {{"plotColorPalette": "#90a4ae, {head}"}}}}}}}}%%'


def _axis(low: float, high: float) -> tuple[float, float]:
    """An axis that shows the rounds' differences: the values' range with a margin, not from 0."""
    span = high - low or abs(high) * 0.01 or 1.0
    return low - span * 0.15, high + span * 0.15


def _num(value: float) -> str:
    """Five significant digits, written without an exponent (Mermaid reads plain decimals)."""
    return f"{float(f'{value:.5g}'):.9f}".rstrip("0").rstrip(".")


def _safe(text: str) -> str:
    """Only characters that cannot close a Mermaid string, start a directive (%%) or a fence."""
    return re.sub("%+", "%", _UNSAFE.sub("", text.replace("±", "+-")))[:80].strip()
