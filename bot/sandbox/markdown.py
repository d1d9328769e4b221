"""Comments rendered as GitHub renders them, near enough for the sandbox's pages: CommonMark with
tables and strikethrough (markdown-it-py, as the command grammar parses comments), and the few
HTML tags GitHub keeps in comments (``<details>``, ``<summary>``, ``<sub>`` ...) without any
attribute; every other tag is shown as text and HTML comments (the bot's markers) are dropped, so
a comment cannot script the page. Links go only where markdown-it lets them (no ``javascript:``)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

ALLOWED_TAGS = frozenset(
    {
        "details",
        "summary",
        "sub",
        "sup",
        "br",
        "b",
        "i",
        "em",
        "strong",
        "code",
        "kbd",
        "p",
        "hr",
        "ins",
        "del",
        "s",
        "blockquote",
        "pre",
        "ul",
        "ol",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
)
# An HTML comment, a bare tag (no attributes), or any other "<": what a raw HTML token may hold.
_PIECE = re.compile(r"<!--.*?-->|<(/?)([A-Za-z][A-Za-z0-9]*)\s*(/?)>|<", re.DOTALL)
_MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def render(text: str) -> str:
    """``text`` (a comment's Markdown) as HTML that is safe to put in a page."""
    return _MARKDOWN.render(text)


def clean(raw: str) -> str:
    """Raw HTML from a comment with only attribute-less allowed tags kept as HTML."""

    def piece(match: re.Match[str]) -> str:
        if match[0].startswith("<!--"):
            return ""
        name = (match[2] or "").lower()
        if name in ALLOWED_TAGS:
            return f"<{match[1]}{name}{' /' if match[3] else ''}>"
        return html.escape(match[0])

    return _PIECE.sub(piece, raw)


def _raw_html(renderer: Any, tokens: Sequence[Token], index: int, options: Any, env: Any) -> str:
    return clean(tokens[index].content)


def _fence(renderer: Any, tokens: Sequence[Token], index: int, options: Any, env: Any) -> str:
    """A ```mermaid block as GitHub leaves it for Mermaid to draw (its source, escaped, in
    ``<pre class="mermaid">``); any other block as CommonMark renders it."""
    token = tokens[index]
    if token.info.strip() == "mermaid":
        return f'<pre class="mermaid">{html.escape(token.content)}</pre>\n'
    return str(renderer.fence(tokens, index, options, env))


_MARKDOWN.add_render_rule("html_block", _raw_html)
_MARKDOWN.add_render_rule("html_inline", _raw_html)
_MARKDOWN.add_render_rule("fence", _fence)
