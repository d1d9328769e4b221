"""How measurements read in sentences and tables: about four significant digits, signed percentages."""

from __future__ import annotations

import math


def number(value: float | None) -> str:
    """A measurement with about four significant digits: 29.0, 0.5831, 94, 12,345."""
    if value is None or not math.isfinite(value):
        return "–"
    size = abs(value)
    if size >= 1000:
        return f"{value:,.0f}"
    if size >= 100:
        return f"{value:.1f}".removesuffix(".0")
    if size >= 1:
        return f"{value:.2f}"
    return f"{value:.4g}"


def percent(change: float | None, digits: int = 1) -> str:
    """A signed relative change: +53.0%, -27.3%."""
    if change is None or not math.isfinite(change):
        return "–"
    return f"{change:+.{digits}%}"
