"""The words of a risk report: a signal's reason sentence, why a weight was lowered, the size
signal, and the report's warnings and notes.

Names from the diff (functions) are clipped to fit a reason, with three dots.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from bot.core.config import CONFIG_PATH
from bot.core.text import clip

if TYPE_CHECKING:
    from bot.core.risk.report import Signal

NAME_LIMIT = 60  # characters of a function's name in a reason
SHOWN_NAMES = 3  # set-up functions named in a reason; the rest are counted
IMPORTS = "imports"  # how a reason names changed imports among a file's set-up code


def as_is(text: str) -> str:
    return text


def describe(
    signal: Signal, text: Callable[[str], str] = as_is, code: Callable[[str], str] | None = None
) -> str:
    """A signal's rule description with what it matched, as every rendering shows it: a version
    change, or a token and whether it was ``added`` or ``removed`` (and how often).

    ``text`` escapes (and clips) prose for the medium; ``code`` makes a code span of a match
    (plain text: the token between backticks, the version change as it is).
    """
    what = text(signal.description)
    if not signal.match:
        return what
    if signal.kind == "dependency":
        return f"{what}: {code(signal.match) if code else signal.match}"
    verb = "removed" if signal.side == "old" else "added"
    what += f": {code(signal.match) if code else f'`{signal.match}`'} {verb}"
    if signal.count > 1:
        what += f" ({signal.count} times)"
    return what


def qualifier(signal: Signal) -> str:
    """What follows the rule id and weight: a lowered weight and why, the rules also met."""
    text = ""
    if signal.full_weight is not None:
        text += f" of {signal.full_weight:g}: {signal.note}"
    if signal.also:
        text += f"; also {', '.join(signal.also)}"
    return text


def sentence(signal: Signal) -> str:
    """The reason a signal gives: what, which rule and weight, and where."""
    where = signal.path if signal.line is None else f"{signal.path}:{signal.line}"
    if signal.function:
        where += f" in {signal.function}()"
    elif signal.line is not None:
        where += " at module level"
    if signal.improves:
        return (
            f"possible improvement: {describe(signal)} [{signal.rule}, {signal.weight:g} apart from "
            f"the score{qualifier(signal)}] at {where}"
        )
    return f"{describe(signal)} [{signal.rule}, +{signal.weight:g}{qualifier(signal)}] at {where}"


def in_setup_code(function: str) -> str:
    """Why a token signal inside a set-up function keeps part of its weight."""
    return f"in set-up code ({_name(function)}())"


def only_setup_code(functions: Sequence[str]) -> str:
    """Why a file's path rules keep part of their weight: the set-up functions changed (`IMPORTS`:
    the file's imports), the first few named."""
    names = list(dict.fromkeys(functions))
    shown = ", ".join(name if name == IMPORTS else f"{_name(name)}()" for name in names[:SHOWN_NAMES])
    if len(names) > SHOWN_NAMES:
        shown += f" and {len(names) - SHOWN_NAMES} more"
    return f"only set-up code changed: {shown}"


def size(lines: int, files: int) -> str:
    """The description of the size signal."""
    return f"size: {lines} changed lines of code in {files} non-cold {'file' if files == 1 else 'files'}"


def files_left_out(changed: int, scored: int) -> str:
    return f"{changed:,} files changed: only the first {scored:,} were scored"


def paths_too_long(count: int, limit: int) -> str:
    return f"{count} path(s) longer than {limit:,} characters were not matched against path rules"


def edits_config() -> str:
    return (
        f"this change edits {CONFIG_PATH}; config changes take effect after merge "
        "and do not affect this score"
    )


def _name(name: str) -> str:
    """A name from the diff, cut to fit in a reason."""
    return clip(name, NAME_LIMIT, ellipsis="...")
