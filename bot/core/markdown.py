"""Small text helpers shared by the renderers: Markdown escaping and human-sized numbers."""

from __future__ import annotations

import math
import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


def escape_md(text: str) -> str:
    """Text safe to place in Markdown: no formatting, links, HTML or table breaks."""
    return _MD_SPECIAL.sub(r"\\\1", text.replace("\n", " ").replace("\r", " "))


def code(text: str) -> str:
    """Text for inside a Markdown code span: no backticks or line breaks to escape it."""
    return text.replace("`", "'").replace("\n", " ").replace("|", "\\|")


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


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
