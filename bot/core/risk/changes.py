"""Recognise changes that cannot change what the code computes: cosmetic edits and renames.

A hunk is *cosmetic* when its removed and added lines hold the same code once comments,
docstrings, whitespace and line breaks, log and print calls, and the messages of raised errors
and assertions are set aside. It is a *rename* when the code differs only in names, and every
renamed name maps one-to-one to a new one, consistently over the whole file, and each rename is
either used twice or made where the name is defined (``def``, ``class``, ``name =``). Renames of
upper-case names in strings count too: they are how environment variables are spelled.

Both are judged on the tokens of each side of the hunk, its context lines included: a docstring
or a log call that starts before a changed line is still seen as one, lines moved past their
context are a change, and in Python the indentation of a statement counts (it says which block
the statement is in). What cannot be told from the hunk (a docstring opened above it) is judged
as code: the classification errs towards "this changes behaviour". Most hunks plainly change
code; regular expressions tell those apart first, so only the rest are turned into tokens.
"""

from __future__ import annotations

import bisect
import itertools
import keyword
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from bot.core.risk.diff import FileChange, Hunk

_HASH_COMMENT = r"#[^\n]*"
_SLASH_COMMENT = r"//[^\n]*|/\*[\s\S]*?\*/"
# Prefixed and triple-quoted strings first; a string never spans a line unless triple-quoted.
_PY_STRING = (r"""[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:[^"\\\n]|\\.)*"|"""
              r"""'(?:[^'\\\n]|\\.)*')""")
_C_STRING = r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'"""
_REST = (r"(?P<name>[A-Za-z_]\w*)|(?P<number>\d[\w.]*)|"
         r"(?P<op>==|!=|<=|>=|->|\*\*|//|::|<<|>>|\+=|-=|\*=|/=|\S)")


@dataclass(frozen=True, slots=True)
class _Language:
    """How to read one family of files: its tokens, and the comments and strings alone."""

    lexer: re.Pattern[str]
    quoted: re.Pattern[str]
    python: bool = False


def _language(comment: str, string: str, python: bool = False) -> _Language:
    # Every alternative is linear: no nested or overlapping repetition, so hostile lines
    # cost time in proportion to their length. The look-ahead lets `re` skip, at C speed,
    # every character that can start neither a comment nor a string.
    return _Language(re.compile(rf"(?P<comment>{comment})|(?P<string>{string})|{_REST}"),
                     re.compile(rf"(?=[#/\"'rRbBuUfF])(?:{comment}|{string})"), python)


_PYTHON = _language(_HASH_COMMENT, _PY_STRING, python=True)
_HASH = _language(_HASH_COMMENT, _C_STRING)
_C_LIKE = _language(_SLASH_COMMENT, _C_STRING)
_NAME = re.compile(r"[A-Za-z_]\w*")
# A hunk with something like a log call in it needs tokens to tell the call apart.
_LOG_HINT = re.compile(r"(?:logger|logging|\blog|LOGGER|warnings)\s*\.\s*\w+\s*\(|"
                       r"\b(?:print|printf|fprintf|pprint|print_once)\s*\(")
_LANGUAGES = {
    **dict.fromkeys((".py", ".pyi"), _PYTHON),
    **dict.fromkeys((".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".cu", ".cuh", ".rs",
                     ".go", ".java", ".js", ".ts"), _C_LIKE),
    **dict.fromkeys((".sh", ".bash", ".toml", ".yml", ".yaml", ".cmake", ".txt", ".cfg",
                     ".ini"), _HASH),
}

# Calls whose whole text is a message: logging, printing, warnings.
_LOG_RECEIVERS = {"logger", "logging", "log", "_logger", "LOGGER", "warnings"}
_LOG_FUNCTIONS = {"print", "printf", "fprintf", "pprint", "print_once"}
# Calls and statements whose string arguments are messages (the rest is code).
_MESSAGE_STARTERS = {"raise", "assert", "TORCH_CHECK", "TORCH_WARN", "TORCH_INTERNAL_ASSERT",
                     "AT_ERROR", "STD_TORCH_CHECK", "CHECK"}
_NOT_RENAMABLE = set(keyword.kwlist) | set(keyword.softkwlist) | {
    "True", "False", "None", "self", "cls", "const", "static", "return", "void", "auto",
    "template", "typename", "struct", "namespace", "public", "private", "protected", "virtual",
    "override", "inline", "unsigned", "int", "float", "double", "bool", "char", "long", "this"}
_NAME_STRING = re.compile(r"""^[rRbBuUfF]{0,2}(["'])([A-Z][A-Z0-9_]{2,})\1$""")


@dataclass(frozen=True, slots=True)
class Harmless:
    """Why a hunk is low risk: ``cosmetic`` or ``rename``, with the renames made."""

    kind: str
    renames: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        if self.kind == "cosmetic":
            return "only comments, docstrings, log messages or formatting changed"
        shown = ", ".join(f"{_short(old)} -> {_short(new)}" for old, new in self.renames[:3])
        more = f" and {len(self.renames) - 3} more" if len(self.renames) > 3 else ""
        return f"rename only ({shown}{more})"


def _short(name: str, limit: int = 40) -> str:
    return name if len(name) <= limit else name[:limit - 3] + "..."


@dataclass(slots=True)
class _Token:
    kind: str  # name | number | op | string (comments are dropped while lexing)
    text: str
    changed: bool
    first: int  # the side's line the token starts on, and the one it ends on
    last: int
    column: int  # where it starts on its line, if it is the first there; else -1
    depth: int = 0  # brackets open around it
    message: bool = False  # part of a log call, a docstring or an error message

    def key(self, python: bool) -> tuple[int, str]:
        """What must be equal for two tokens to mean the same: the text, and in Python the
        indentation of a statement's first token (it says which block the statement is in)."""
        starts_statement = python and self.depth == 0 and self.text not in ")]}"
        return (self.column if starts_statement else -1), self.text


class Judge:
    """Judges the hunks of one file on demand, each at most once: most files need only their
    first hunk judged (it changes code, so their rules keep their weight), not all of them."""

    def __init__(self, change: FileChange):
        self._hunks = change.hunks
        self._language = _LANGUAGES.get(PurePosixPath(change.path).suffix.lower())
        if change.is_binary or change.status in ("added", "deleted"):
            self._language = None
        self._first: dict[int, Harmless | dict[str, str] | None] = {}
        self._renames: dict[int, Harmless] | None = None
        self._old_code: dict[int, list[_Token]] = {}  # removed code of rename candidates

    def __call__(self, number: int) -> Harmless | None:
        """Why hunk ``number`` is harmless, or None when it may change behaviour."""
        found = self._first_look(number)
        if isinstance(found, dict):  # a rename, if the rest of the file agrees
            return self._confirmed_renames().get(number)
        return found

    @property
    def hunks(self) -> int:
        return len(self._hunks)

    def all(self) -> list[Harmless | None]:
        return [self(number) for number in range(len(self._hunks))]

    def _first_look(self, number: int) -> Harmless | dict[str, str] | None:
        if number not in self._first:
            language = self._language
            self._first[number] = self._look(number, language) if language else None
        return self._first[number]

    def _look(self, number: int, language: _Language) -> Harmless | dict[str, str] | None:
        hunk = self._hunks[number]
        if not _may_log(hunk.joined()) and not _may_match(hunk, language):
            return None  # the code differs beyond what tokens could explain away
        # Whole sides, context included: the same lines moved past their context are a change.
        before, after = (_code(hunk, language.lexer, side) for side in "-+")
        python = language.python
        if [t.key(python) for t in before] == [t.key(python) for t in after]:
            return Harmless("cosmetic")
        mapping = _renames(before, after, python)
        if mapping and _fresh(mapping, before, after):
            self._old_code[number] = [t for t in before if t.changed]
            return mapping
        return None

    def _confirmed_renames(self) -> dict[int, Harmless]:
        if self._renames is None:
            candidates = {number: found for number in range(len(self._hunks))
                          if isinstance(found := self._first_look(number), dict)}
            confirmed = _confirmed(self._old_code, candidates)
            self._renames = {number: Harmless("rename", renames)
                             for number, renames in confirmed.items()}
        return self._renames


def _may_log(text: str) -> bool:
    """Whether ``text`` may hold a log call (plain substring tests first: they are cheap)."""
    return any(word in text for word in ("log", "LOG", "warnings", "print")) and bool(
        _LOG_HINT.search(text))


def _may_match(hunk: Hunk, language: _Language) -> bool:
    """Whether the two sides of a hunk with no log call in sight could be the same code: once
    comments, strings and whitespace are gone, they must be equal but for names, and those must
    differ one-to-one. Regular expressions do the work, so most hunks need no tokens."""
    old, new = (language.quoted.sub(" ", "".join(
        t for t, kind in zip(hunk.texts, hunk.types, strict=True) if kind in kinds))
        for kinds in (" -", " +"))
    if "".join(_NAME.sub("a", old).split()) != "".join(_NAME.sub("a", new).split()):
        return False
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for before, after in zip(_NAME.findall(old), _NAME.findall(new), strict=True):
        if forward.setdefault(before, after) != after or backward.setdefault(after, before) != before:
            return False
        if before != after and (before in _NOT_RENAMABLE or after in _NOT_RENAMABLE):
            return False
    return True


def classify(change: FileChange) -> list[Harmless | None]:
    """For each hunk of ``change``: why it is harmless, or None when it may change behaviour."""
    return Judge(change).all()


def _code(hunk: Hunk, lexer: re.Pattern[str], side: str) -> list[_Token]:
    """The tokens of one side of ``hunk`` that are code (not comments or messages)."""
    tokens = _side_tokens(hunk, lexer, side)
    _mark_messages(tokens)
    return [t for t in tokens if not t.message]


def _side_tokens(hunk: Hunk, lexer: re.Pattern[str], side: str) -> list[_Token]:
    """The tokens of one side of ``hunk`` (its context and its ``side`` lines), each with the
    lines it spans and the brackets around it."""
    keep = [index for index, kind in enumerate(hunk.types) if kind == " " or kind == side]
    texts = [hunk.texts[index] for index in keep]
    changed = [hunk.types[index] == side for index in keep]
    starts = [0, *itertools.accumulate(map(len, texts))][:-1]
    tokens: list[_Token] = []
    for match in lexer.finditer("".join(texts)):
        kind = match.lastgroup
        if kind is None or kind == "comment":  # never None: every alternative is a named group
            continue
        begin, end = match.span()
        line = bisect.bisect_right(starts, begin) - 1
        last = bisect.bisect_right(starts, end - 1) - 1 if end - begin > 1 else line
        # A token that spans lines (a docstring) is changed if any of its lines is.
        touched = changed[line] if last == line else any(changed[line:last + 1])
        leads = not tokens or tokens[-1].last < line
        tokens.append(_Token(kind, match[0], touched, line, last,
                             begin - starts[line] if leads else -1))
    _set_depths(tokens)
    return tokens


def _set_depths(tokens: list[_Token]) -> None:
    """Bracket depth of each token; a hunk that starts inside brackets (a closing one with no
    opening) is counted from the depth that makes the lowest point zero."""
    depth, lowest, depths = 0, 0, []
    for token in tokens:
        if token.text in ")]}":
            depth -= 1
            lowest = min(lowest, depth)
        depths.append(depth)
        if token.text in "([{":
            depth += 1
    for token, found in zip(tokens, depths, strict=True):
        token.depth = found - lowest


def _mark_messages(tokens: list[_Token]) -> None:
    """Flag log calls (whole), lone strings (docstrings), and the strings of raises, asserts and
    checks."""
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.kind == "string" and token.depth == 0 and _alone(tokens, index):
            token.message = True  # a string statement: a docstring, or a no-op
        elif token.kind == "name" and _is_log_call(tokens, index):
            start = index
            while start >= 2 and tokens[start - 1].text == "." and tokens[start - 2].kind == "name":
                start -= 2  # the receiver's owner: self.logger.info(...)
            end = _closing(tokens, index + (1 if tokens[index + 1].text == "(" else 3))
            for covered in tokens[start:end + 1]:
                covered.message = True
            index = end
        elif token.kind == "name" and token.text in _MESSAGE_STARTERS:
            for covered in tokens[index + 1:_statement_end(tokens, index)]:
                if covered.kind == "string":
                    covered.message = True
        index += 1


def _alone(tokens: list[_Token], index: int) -> bool:
    """Whether the token is the only one on the lines it spans."""
    token = tokens[index]
    return ((index == 0 or tokens[index - 1].last < token.first)
            and (index + 1 == len(tokens) or tokens[index + 1].first > token.last))


def _is_log_call(tokens: list[_Token], index: int) -> bool:
    text = tokens[index].text
    if text in _LOG_FUNCTIONS:  # a function, not a method of that name
        return ((index == 0 or tokens[index - 1].text != ".")
                and index + 1 < len(tokens) and tokens[index + 1].text == "(")
    if text in _LOG_RECEIVERS or text.endswith("logger"):
        return (index + 3 < len(tokens) and tokens[index + 1].text == "."
                and tokens[index + 2].kind == "name" and tokens[index + 3].text == "(")
    return False


def _closing(tokens: list[_Token], opening: int) -> int:
    """Index of the bracket that closes the one at ``opening`` (or the last token)."""
    depth = tokens[opening].depth
    for index in range(opening + 1, len(tokens)):
        if tokens[index].depth == depth and tokens[index].text in ")]}":
            return index
    return len(tokens) - 1


def _statement_end(tokens: list[_Token], start: int) -> int:
    """Index just past the statement that ``start`` begins: up to the first token at its depth
    on a later line, or a bracket that closes around it."""
    depth, line = tokens[start].depth, tokens[start].first
    for index in range(start + 1, len(tokens)):
        token = tokens[index]
        if token.depth < depth or (token.depth == depth and token.first > line
                                    and tokens[index - 1].last < token.first):
            return index
    return len(tokens)


def _renames(old: list[_Token], new: list[_Token], python: bool) -> dict[str, str] | None:
    """The names that, renamed one-to-one, turn ``old`` into ``new``; None when that does not."""
    if len(old) != len(new):
        return None
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for before, after in zip(old, new, strict=True):
        if before.key(python)[0] != after.key(python)[0]:
            return None  # the statement moved to another block
        if before.text == after.text:
            if forward.get(before.text, before.text) != before.text:
                return None  # renamed elsewhere in the hunk, kept here
            continue
        a, b = _renamable(before), _renamable(after)
        if a is None or b is None:
            return None
        if forward.setdefault(a, b) != b or backward.setdefault(b, a) != a:
            return None
    return forward or None


def _fresh(mapping: dict[str, str], before: list[_Token], after: list[_Token]) -> bool:
    """A rename replaces a name everywhere in sight: the old name is gone from the new side,
    context included, and the new name was nowhere on the old side."""
    old_names = {_renamable(t) for t in before}
    new_names = {_renamable(t) for t in after}
    return not (mapping.keys() & new_names or set(mapping.values()) & old_names)


def _renamable(token: _Token) -> str | None:
    if token.kind == "name" and token.text not in _NOT_RENAMABLE:
        return token.text
    if token.kind == "string":
        match = _NAME_STRING.match(token.text)
        return match[2] if match else None
    return None


def _confirmed(old_code: dict[int, list[_Token]], candidates: dict[int, dict[str, str]]
               ) -> dict[int, tuple[tuple[str, str], ...]]:
    """The candidate hunks whose renames agree over the file and look like renames
    (``old_code``: each candidate's removed code tokens)."""
    merged: dict[str, str] = {}
    for mapping in candidates.values():
        for old, new in mapping.items():
            if merged.setdefault(old, new) != new:
                return {}
    if len(set(merged.values())) != len(merged):
        return {}
    uses: dict[str, int] = dict.fromkeys(merged, 0)
    defined: set[str] = set()
    for tokens in old_code.values():
        for index, token in enumerate(tokens):
            name = _renamable(token)
            if name in uses:
                uses[name] += 1
                if _defines(tokens, index):
                    defined.add(name)
    if any(uses[name] < 2 and name not in defined for name in merged):
        return {}
    return {number: tuple(sorted(mapping.items())) for number, mapping in candidates.items()}


def _defines(tokens: list[_Token], index: int) -> bool:
    before = tokens[index - 1].text if index > 0 else ""
    after = tokens[index + 1].text if index + 1 < len(tokens) else ""
    return before in ("def", "class") or after in ("=", ":")
