"""Small text helpers shared by the renderers: Markdown escaping and clipping."""

from __future__ import annotations

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
