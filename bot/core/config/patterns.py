"""Compile the rules' regular expressions (RE2) and path globs (gitignore style).

Token rules run over every changed line of diffs that can be tens of megabytes, and their
patterns may come from a repository's config: RE2 matches in linear time (no catastrophic
backtracking) and scans an alternation of many rules in one pass, about 25 times faster than
Python's `re` on real engine diffs (see docs/performance.md). Its syntax is Python's minus
look-arounds and back-references.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import re2
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # report through PatternError, not on standard error
_LEADING_FLAGS = re.compile(r"^\(\?([imsU]+)\)")
_PATHSPEC_GROUP = re.compile(r"\(\?P<ps_d>")


class PatternError(ValueError):
    """A regular expression that RE2 cannot compile."""


def regex(pattern: str) -> re2._Regexp:
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
    return f"(?{match[1]}:{pattern[match.end():]})"


def glob_regex(globs: Iterable[str]) -> re.Pattern[str]:
    """One regex matching a path when any of the gitignore-style ``globs`` matches it."""
    parts = []
    for glob in globs:
        source, include = GitIgnoreSpecPattern.pattern_to_regex(glob)
        if source is not None and include:
            # pathspec names a group in each pattern; names must be unique in one alternation.
            parts.append(_PATHSPEC_GROUP.sub("(?:", source))
    return re.compile("|".join(f"(?:{p})" for p in parts) or r"(?!)")
