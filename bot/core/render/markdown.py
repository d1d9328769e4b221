"""Markdown safety, the one place every renderer escapes text that did not come from the bot, and
`fit`, which keeps a document under GitHub's comment limit.

Paths, commit subjects, metric names, units, host names, error messages and config errors go
through `escape_md` (prose), `code` (the inside of a code span) or `code_block` (lines of a fenced
block). None of them lets through hidden or reordering characters or breaks out of its place (a
table row stays one row, a code block ends at its own fence), and prose cannot format, open HTML,
link or notify anyone: mentions (``@user``, ``@org/team``), bare URLs and e-mail addresses become
code spans, which GitHub neither links nor reads mentions in."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from bot.core.text import printable

# Every ASCII punctuation character that can start formatting, a link, HTML, an entity (which
# could spell a hidden character or an @) or a table cell; a backslash makes each literal.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")
_BREAKS = re.compile(r"[\t\n\v\f\r\u2028\u2029]")
# What GitHub would turn into a link or a notification: URLs of the schemes it autolinks, www.
# addresses, e-mail addresses (a dot in the domain) and @mentions. A URL stops before characters
# that a code span cannot hold as they are, and leaves out trailing punctuation, as GitHub does.
_LINKISH = re.compile(
    r"(?:(?:https?|ftp)://|www\.)(?:[^\s<>`|]*[^\s<>`|.,:;!?'\")\]*_~])?"
    r"|[A-Za-z0-9.+_-]+@[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+"
    r"|@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9_-])?)?",
    re.IGNORECASE,
)
_WORD_CHARACTER = re.compile(r"[A-Za-z0-9_]")
_BACKTICKS = re.compile(r"`+")
# A link target: http(s) and a host; what a target may hold as it is (RFC 3986's characters, less
# the parentheses and quotes that end or confuse one in Markdown).
_WEB_ADDRESS = re.compile(r"(?i)https?://[^/?#\s\\]+")
_UNSAFE_IN_TARGET = re.compile(r"[^A-Za-z0-9:/?#\[\]@!$&*+,;=%._~-]")


def escape_md(text: str) -> str:
    """Untrusted text as inert Markdown prose on one line: no formatting, HTML, links, mentions,
    table breaks, or hidden and bidi characters."""
    text = _one_line(text)
    parts, prose = [], 0
    for start, end in _linkish(text):
        parts += [_MD_SPECIAL.sub(r"\\\1", text[prose:start]), f"`{text[start:end]}`"]
        prose = end
    parts.append(_MD_SPECIAL.sub(r"\\\1", text[prose:]))
    return "".join(parts)


def escape_html_text(text: str) -> str:
    """Untrusted text as inert text inside raw HTML (a ``<summary>``, where GitHub renders no
    Markdown, so a backslash escape would show as a backslash): HTML-escaped, on one line, with
    what GitHub would link or notify in ``<code>``."""
    text = _one_line(text)
    parts, prose = [], 0
    for start, end in _linkish(text):
        linkish = html.escape(text[start:end], quote=False)
        parts += [html.escape(text[prose:start], quote=False), f"<code>{linkish}</code>"]
        prose = end
    parts.append(html.escape(text[prose:], quote=False))
    return "".join(parts)


def _linkish(text: str) -> list[tuple[int, int]]:
    """Where GitHub would link or notify, as (start, end) pairs.

    An @ after a letter, digit or underscore is no mention, except right after a code span: the
    span ends a text node, and an @ that opens one is a mention. Touching matches are merged,
    since two code spans cannot touch.
    """
    found: list[tuple[int, int]] = []
    position = 0
    while (match := _LINKISH.search(text, position)) is not None:
        start, end = match.span()
        touching = bool(found) and found[-1][1] == start
        if text[start] == "@" and start > 0 and not touching and _WORD_CHARACTER.match(text[start - 1]):
            position = start + 1
            continue
        if touching:
            found[-1] = (found[-1][0], end)
        else:
            found.append((start, end))
        position = end
    return found


def code(text: str) -> str:
    """Untrusted text for inside a code span: one line, no backtick to end the span, no hidden
    characters, and pipes escaped so that a table row stays one row."""
    return _one_line(text).replace("`", "'").replace("|", "\\|")


def link_target(url: str) -> str | None:
    """``url`` as the target of a Markdown link, ``[text](target)``: an http(s) URL with a host,
    every character that could end the target or start another (a parenthesis, a space, angle
    brackets, quotes, a backtick, a pipe, anything not ASCII) percent-encoded as UTF-8; None for
    anything else (``javascript:``, a relative path, no host)."""
    url = printable(url, replacement="")
    if not _WEB_ADDRESS.match(url):
        return None
    return _UNSAFE_IN_TARGET.sub(lambda found: "".join(f"%{b:02X}" for b in found[0].encode()), url)


def code_block(text: str, info: str = "") -> str:
    """``text`` as a fenced code block, without hidden characters, fenced with more backticks than
    any run inside so that no line can close it early."""
    lines = [printable(line, replacement="") for line in text.splitlines()]
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n" + "".join(f"{line}\n" for line in lines) + fence


def fit(blocks: Iterable[str], limit: int) -> str:
    """Join blocks with blank lines, leaving out whole blocks (and saying so) once the next would pass
    the limit, so that a document never ends in a cut table or code block."""
    kept, size, dropped = [], 0, 0
    for block in blocks:
        if not block:
            continue
        if size + len(block) + 2 > limit - 200:
            dropped += 1
            continue
        kept.append(block)
        size += len(block) + 2
    if dropped:
        kept.append(f"*{dropped} section(s) left out to stay under GitHub's comment size limit.*")
    return "\n\n".join(kept) + "\n"


def _one_line(text: str) -> str:
    return printable(_BREAKS.sub(" ", text), replacement="")
