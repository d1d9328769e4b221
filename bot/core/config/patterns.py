"""Compile the rules' regular expressions and path globs (gitignore style), both with RE2.

Token rules run over every changed line of diffs that can be tens of megabytes, and their
patterns may come from a repository's config: RE2 matches in linear time (no catastrophic
backtracking) and scans an alternation of many rules in one pass, about 25 times faster than
Python's `re` on real engine diffs (see docs/performance.md). Its syntax is Python's minus
look-arounds and back-references.

Globs get the same treatment: pathspec translates each to a regular expression (keeping
gitignore's semantics; the built-in profiles' globs come translated already, `glob_table`), and
RE2, not `re`, runs it. Both the globs (a repository's config) and
the paths (a pull request's author) are untrusted: under `re`, ``*a*a*a*a*a*a*b`` against a
100-character name backtracks for minutes; under RE2 it takes microseconds. Paths longer than
`MAX_PATH_LENGTH` are not matched at all, which bounds the time per path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeAlias

import re2

from bot.core.config.glob_table import TRANSLATED

# Git's own limit on a path (PATH_MAX on Linux): no real checkout has a longer one.
MAX_PATH_LENGTH = 4096

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # report through PatternError, not on standard error
_LEADING_FLAGS = re.compile(r"^\(\?([imsU]+)\)")
_PATHSPEC_GROUP = re.compile(r"\(\?P<ps_d>")

# A compiled RE2 pattern (always compiled from text); it searches text or, faster, ASCII bytes.
Regex: TypeAlias = "re2._Regexp[str]"
# A match of a `Regex` over either kind of subject.
Match: TypeAlias = "re2._Match[str] | re2._Match[bytes]"


class PatternError(ValueError):
    """A regular expression that RE2 cannot compile, or a glob that is not one."""


def regex(pattern: str) -> Regex:
    """Compile ``pattern`` with RE2; raise `PatternError` with RE2's reason."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else error
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(f"not a valid RE2 regular expression: {reason}") from None


def scoped_flags(pattern: str) -> str:
    """Turn leading flags, ``(?i)x``, into a scoped group, ``(?i:x)``, so that the pattern can
    sit inside an alternation with others without changing them."""
    match = _LEADING_FLAGS.match(pattern)
    if match is None:
        return f"(?:{pattern})"
    return f"(?{match[1]}:{pattern[match.end() :]})"


def glob_regex(globs: Iterable[str]) -> Regex:
    """One RE2 regex that finds (`search`, as pathspec does: ``*/`` is unanchored) a path when
    any of the gitignore-style ``globs`` matches it.

    Negated globs (``!x``) are left out: a rule's globs list what it matches.
    """
    parts = []
    for glob in globs:
        source, include = TRANSLATED.get(glob) or _translate(glob)
        if source is not None and include:
            # pathspec names a group in each pattern; names must be unique in one alternation.
            parts.append(_PATHSPEC_GROUP.sub("(?:", source))
    # An empty character class: matches nothing (RE2 has no look-ahead to write `(?!)`).
    return regex("|".join(f"(?:{p})" for p in parts) or r"[^\s\S]")


def _translate(glob: str) -> tuple[str | None, bool]:
    """pathspec's translation of a glob that is not a built-in one (loaded only for those)."""
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    try:
        source, include = GitIgnoreSpecPattern.pattern_to_regex(glob)
    except ValueError as error:
        raise PatternError(f"not a valid glob: {error}") from None
    return source, bool(include)


def matchable(path: str) -> bool:
    """Whether ``path`` is short enough to be matched against globs (see `MAX_PATH_LENGTH`)."""
    return len(path) <= MAX_PATH_LENGTH
