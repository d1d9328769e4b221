"""Plain-text safety any capability may use: clip untrusted text to a length, and show only what a
reader can see (no control, separator, bidi or zero-width characters).

Text from outside the bot (paths, commit subjects, metric names, runner output, config errors) can be
of any length and can hide or reorder what a reader sees. Markdown escaping builds on these helpers
in `bot.core.render.markdown`.
"""

from __future__ import annotations

import re
from typing import Literal

ELLIPSIS = "…"

# Format characters (Unicode category Cf: soft hyphen, bidi embeddings, overrides, marks and isolates,
# zero-width spaces and joiners, the word joiner, the byte-order mark, tags, ...). Listed rather than
# computed from `unicodedata` at import, which would cost every command a scan of all code points; a
# test checks the list against the running Python's Unicode database.
_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
# Controls (Cc), line and paragraph separators (Zl, Zp), format characters and lone surrogates
# (which JSON may carry but no output stream can encode).
_UNSEEN = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_FORMAT}\ud800-\udfff]")


def clip(text: str, limit: int, *, keep: Literal["start", "ends"] = "start", ellipsis: str = ELLIPSIS) -> str:
    """``text`` in at most ``limit`` characters, an ellipsis marking any cut: at the end (``keep=
    "start"``), or in the middle (``keep="ends"``, for paths and names whose end says the most).

    ``ellipsis``: the mark of the cut, counted in the limit (the risk engine's reasons have always
    cut names with three dots, ``...``)."""
    if len(text) <= limit:
        return text
    half = (limit - len(ellipsis) - 1) // 2
    if keep == "ends" and half > 0:
        return text[:half] + ellipsis + text[-half:]
    return text[: max(0, limit - len(ellipsis))] + ellipsis


def printable(text: str, replacement: str = "?") -> str:
    """``text`` with every character a reader cannot see, or that could reorder or restyle what a
    terminal shows (controls, line breaks, bidi and zero-width characters), replaced."""
    return _UNSEEN.sub(replacement, text)
