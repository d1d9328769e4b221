"""Recognise changes that cannot change what the code computes: cosmetic edits and renames.

A hunk is *cosmetic* when its removed and added lines hold the same code once comments,
docstrings, whitespace and line breaks, log and print calls, and the messages of raised errors
and assertions are set aside, and what formatters change is undone on both sides (`_canonical`):
line continuations, optional trailing commas, the quotes of a plain string, and in Python the
parentheses around a whole statement part (``(a, b) = f()``, ``return (x)``, ``if (c):``, an
import's name list) and the order of a block of imports. It is a *rename* when the code differs
only in names, and every
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
import functools
import itertools
import keyword
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from bot.core.risk.diff import FileChange, Hunk
from bot.core.text import clip

_HASH_COMMENT = r"#[^\n]*"
_SLASH_COMMENT = r"//[^\n]*|/\*[\s\S]*?\*/"
# Prefixed and triple-quoted strings first; a string never spans a line unless triple-quoted.
_PY_STRING = (
    r"""[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:[^"\\\n]|\\.)*"|"""
    r"""'(?:[^'\\\n]|\\.)*')"""
)
_C_STRING = r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'"""
_REST = (
    r"(?P<name>[A-Za-z_]\w*)|(?P<number>\d[\w.]*)|"
    r"(?P<op>==|!=|<=|>=|->|\*\*|//|::|<<|>>|\+=|-=|\*=|/=|\S)"
)


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
    return _Language(
        re.compile(rf"(?P<comment>{comment})|(?P<string>{string})|{_REST}"),
        re.compile(rf"(?=[#/\"'rRbBuUfF])(?:{comment}|{string})"),
        python,
    )


_PYTHON = _language(_HASH_COMMENT, _PY_STRING, python=True)
_HASH = _language(_HASH_COMMENT, _C_STRING)
_C_LIKE = _language(_SLASH_COMMENT, _C_STRING)
_NAME = re.compile(r"[A-Za-z_]\w*")
# What formatters add or take away: left out when `_same_characters` compares two sides.
_REFORMAT_NOISE = str.maketrans("", "", " \t\n\r\f\v,()\\")
# A line of an import statement or an include: its head, a name of its list, or its closing.
_IMPORT_HEAD = re.compile(r"^\s*(?:from\s+\S+\s+import\b|import\s|#\s*include\b)")
_IMPORT_LINE = re.compile(r"^\s*(?:(?:from|import)\s|#\s*include\b|[\w.]+(?:\s+as\s+\w+)?\s*,?\s*$|\)\s*$)")
# Import-time code that selects what runs at every step keeps its weight: an import of a
# kernel or backend module (changing it swaps the implementation), whatever its form.
_SELECTING_IMPORT = re.compile(
    r"(?i)kernel|triton|flashinfer|flash_?attn|cutlass|deep_?gemm|deep_?ep|aiter|cuda|nccl|"
    r"backend|fused|\bops\b|_ops\b|\b_C\b|csrc|cublas|cudnn|mscclpp|quant"
)
# Module-level statements that run once and choose nothing: a logger, the public names, typing.
_IMPORT_TIME_STATEMENT = re.compile(
    r"^(?:(?:__all__|logger|_logger|LOGGER|log)\s*(?::[^=]*)?[=+]|"
    r"\w+\s*=\s*(?:typing\.)?(?:TypeVar|NewType|ParamSpec)\()"
)
# A hunk with something like a log call in it needs tokens to tell the call apart.
# (Every alternative starts with one of [lLwpf]: the look-ahead, which changes no match, lets `re`
# skip the other characters at C speed.)
_LOG_HINT = re.compile(
    r"(?=[lLwpf])(?:(?:logger|logging|\blog|LOGGER|warnings)\s*\.\s*\w+\s*\(|"
    r"\b(?:print|printf|fprintf|pprint|print_once)\s*\()"
)
_LANGUAGES = {
    **dict.fromkeys((".py", ".pyi"), _PYTHON),
    **dict.fromkeys(
        (
            ".c",
            ".cc",
            ".cpp",
            ".cxx",
            ".h",
            ".hh",
            ".hpp",
            ".cu",
            ".cuh",
            ".rs",
            ".go",
            ".java",
            ".js",
            ".ts",
        ),
        _C_LIKE,
    ),
    **dict.fromkeys((".sh", ".bash", ".toml", ".yml", ".yaml", ".cmake", ".txt", ".cfg", ".ini"), _HASH),
}

# Calls whose whole text is a message: logging, printing, warnings.
_LOG_RECEIVERS = {"logger", "logging", "log", "_logger", "LOGGER", "warnings"}
_LOG_FUNCTIONS = {"print", "printf", "fprintf", "pprint", "print_once"}
# Calls and statements whose string arguments are messages (the rest is code).
_MESSAGE_STARTERS = {
    "raise",
    "assert",
    "TORCH_CHECK",
    "TORCH_WARN",
    "TORCH_INTERNAL_ASSERT",
    "AT_ERROR",
    "STD_TORCH_CHECK",
    "CHECK",
}
_NOT_RENAMABLE = (
    set(keyword.kwlist)
    | set(keyword.softkwlist)
    | {
        "True",
        "False",
        "None",
        "self",
        "cls",
        "const",
        "static",
        "return",
        "void",
        "auto",
        "template",
        "typename",
        "struct",
        "namespace",
        "public",
        "private",
        "protected",
        "virtual",
        "override",
        "inline",
        "unsigned",
        "int",
        "float",
        "double",
        "bool",
        "char",
        "long",
        "this",
    }
)
_NAME_STRING = re.compile(r"""^[rRbBuUfF]{0,2}(["'])([A-Z][A-Z0-9_]{2,})\1$""")


# Why a hunk is low risk: it changes no code (comments, docstrings, log messages, formatting),
# only renames, only moves lines that the same change removes or adds elsewhere, or makes the
# same edit as hunks of other files (a mechanical sweep).
HarmlessKind = Literal["cosmetic", "rename", "move", "sweep"]
# A pure move: at least this many changed lines of code, every one of them found on the other
# side elsewhere in the change (a single line moved into a loop is a change of behaviour).
MOVE_MIN_LINES = 3
# A sweep: the same edit in hunks of at least this many files.
SWEEP_MIN_FILES = 3
_NAME_LIMIT = 40  # characters of a renamed name in a reason


@dataclass(frozen=True, slots=True)
class Harmless:
    """Why a hunk is low risk: ``cosmetic``, ``rename`` (with the renames made), ``move`` or
    ``sweep`` (with the number of files that make the same edit)."""

    kind: HarmlessKind
    renames: tuple[tuple[str, str], ...] = ()
    files: int = 0

    def describe(self) -> str:
        if self.kind == "cosmetic":
            return "only comments, docstrings, log messages or formatting changed"
        if self.kind == "move":
            return "moved code only (the same lines removed or added elsewhere in this change)"
        if self.kind == "sweep":
            return f"a mechanical edit (the same edit in {self.files} files)"
        shown = ", ".join(f"{_name(old)} -> {_name(new)}" for old, new in self.renames[:3])
        more = f" and {len(self.renames) - 3} more" if len(self.renames) > 3 else ""
        return f"rename only ({shown}{more})"


def _name(name: str) -> str:
    return clip(name, _NAME_LIMIT, ellipsis="...")


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


class HarmlessHunks:
    """Judges the hunks of one file on demand, each at most once: most files need only their
    first hunk judged (it changes code, so their rules keep their weight), not all of them."""

    def __init__(self, change: FileChange, mechanical: Mapping[int, Harmless] | None = None):
        self._hunks = change.hunks
        self._mechanical = mechanical or {}  # moves and sweeps, judged over the whole change
        self._language = _language_of(change.path)
        if change.is_binary or change.status in ("added", "deleted"):
            self._language = None
        self._first: dict[int, Harmless | dict[str, str] | None] = {}
        self._renames: dict[int, Harmless] | None = None
        self._old_code: dict[int, list[_Token]] = {}  # removed code of rename candidates

    def __call__(self, number: int) -> Harmless | None:
        """Why hunk ``number`` is harmless, or None when it may change behaviour."""
        found = self._first_look(number)
        if isinstance(found, dict):  # a rename, if the rest of the file agrees
            found = self._confirmed_renames().get(number)
        return found if found is not None else self._mechanical.get(number)

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
        sides = _sides(hunk, language)
        if _may_log(hunk.joined()):
            # Tokens set log calls aside whole; their text, set aside the same way, leaves what
            # the tokens would compare, so sides that differ beyond names and formatting then
            # need no tokens either.
            sides = (_without_log_calls(sides[0]), _without_log_calls(sides[1]))
        if not (_same_punctuation(sides) and (_may_match(sides) or _same_characters(sides))) and not (
            _imports_only(hunk) and _same_names(sides)
        ):
            return None  # the code differs beyond what tokens could explain away
        # Whole sides, context included: the same lines moved past their context are a change.
        before, after = (_code(hunk, language.lexer, side) for side in "-+")
        python = language.python
        if _canonical(before, python) == _canonical(after, python):
            return Harmless("cosmetic")
        mapping = _renames(before, after, python)
        if mapping and _fresh(mapping, before, after):
            self._old_code[number] = [t for t in before if t.changed]
            return mapping
        return None

    def _confirmed_renames(self) -> dict[int, Harmless]:
        if self._renames is None:
            candidates = {
                number: found
                for number in range(len(self._hunks))
                if isinstance(found := self._first_look(number), dict)
            }
            confirmed = _confirmed(self._old_code, candidates)
            self._renames = {number: Harmless("rename", renames) for number, renames in confirmed.items()}
        return self._renames


def describe_all(found: Sequence[Harmless]) -> str:
    """Why a file whose code changes are all ``found`` (none cosmetic) keeps little weight: its
    renames together, else the first reason."""
    renames = tuple(dict.fromkeys(pair for reason in found for pair in reason.renames))
    return Harmless("rename", renames).describe() if renames else found[0].describe()


def mechanical(files: Sequence[FileChange]) -> dict[int, dict[int, Harmless]]:
    """The hunks of a change (by file index, then hunk number) that only move code or make a
    mechanical edit: a ``move`` hunk has `MOVE_MIN_LINES` or more changed lines of code, each
    removed one added elsewhere in the change and each added one removed elsewhere (indentation
    aside); a ``sweep`` hunk makes the same edit, line for line, as hunks of other files, in
    `SWEEP_MIN_FILES` or more files, and the edit replaces lines: the same lines only added (a
    host sync written into every backend) or only removed are new behaviour everywhere, not a
    mechanical edit. Only source files in a language known here are judged."""
    # Each edit's removed and added lines of code, sorted (what makes two edits the same).
    edits: list[tuple[int, int, tuple[str, ...], tuple[str, ...]]] = []
    for file_number, change in enumerate(files):
        if change.is_binary or _language_of(change.path) is None:
            continue
        markers = comment_markers(change.path)
        for number, hunk in enumerate(change.hunks):
            indices, stripped = hunk.code_changes(markers)
            if not indices:
                continue
            kinds = "".join(map(hunk.types.__getitem__, indices))  # each line of code's type, in C
            old = sorted(itertools.compress(stripped, map("-".__eq__, kinds)))
            new = sorted(itertools.compress(stripped, map("-".__ne__, kinds)))
            edits.append((file_number, number, tuple(old), tuple(new)))
    # Counted once over all edits, in C; a hunk's own lines are counted only where it may be a move.
    removed_all = Counter(itertools.chain.from_iterable(gone for _, _, gone, _ in edits))
    added_all = Counter(itertools.chain.from_iterable(came for _, _, _, came in edits))
    found: dict[int, dict[int, Harmless]] = {}
    by_edit: dict[tuple[tuple[str, ...], tuple[str, ...]], set[int]] = {}
    for file_number, _, gone, came in edits:
        by_edit.setdefault((gone, came), set()).add(file_number)
    for file_number, number, gone, came in edits:
        sweep = by_edit[(gone, came)]
        if gone and came and len(sweep) >= SWEEP_MIN_FILES:
            found.setdefault(file_number, {})[number] = Harmless("sweep", files=len(sweep))
        elif len(gone) + len(came) >= MOVE_MIN_LINES:
            removed, added = Counter(gone), Counter(came)
            if all(added_all[line] - added[line] >= n for line, n in removed.items()) and all(
                removed_all[line] - removed[line] >= n for line, n in added.items()
            ):
                found.setdefault(file_number, {})[number] = Harmless("move")
    return found


# `_LOG_HINT`'s alternatives one by one, each starting with its literal (which `re` finds at C
# speed; the alternation as a whole, or a leading \b, makes it try every position). Those that
# `_LOG_HINT` wants at the start of a word have that checked at each match: a match of one of
# these patterns never holds another of the same pattern, so none is missed.
_LOG_CALLS = tuple(
    re.compile(rf"{word}\s*\.\s*\w+\s*\(") for word in ("logger", "logging", "LOGGER", "warnings")
)
_LOG_CALLS_AT_WORD = tuple(
    re.compile(pattern)
    for pattern in (r"log\s*\.\s*\w+\s*\(", r"print(?:f|_once)?\s*\(", r"fprintf\s*\(", r"pprint\s*\(")
)
_WORD_CHARACTER = re.compile(r"\w")


def _may_log(text: str) -> bool:
    """Whether ``text`` may hold a log call: whether `_LOG_HINT` finds one (plain substring tests
    first: they are cheap)."""
    if not ("log" in text or "LOG" in text or "warnings" in text or "print" in text):
        return False
    if any(pattern.search(text) for pattern in _LOG_CALLS):
        return True
    return any(
        found.start() == 0 or _WORD_CHARACTER.match(text, found.start() - 1) is None
        for pattern in _LOG_CALLS_AT_WORD
        for found in pattern.finditer(text)
    )


_GAPS = " \t\n\r\f\v\\"  # what may stand between two tokens of one call
_BRACKET = re.compile(r"[()\[\]{}]")


def _without_log_calls(text: str) -> str:
    """``text`` (a side with its comments and strings blanked) without the log calls that
    `_mark_messages` sets aside, as `_is_log_call` finds them: a log function called (not a method
    of that name), or a log receiver's ``.name(``, with the names and dots before the receiver;
    each up to the bracket that closes its call (to the end when the hunk ends first)."""
    kept, position = [], 0
    for match in _LOG_HINT.finditer(text):
        start = _word_start(text, match.start())
        if start < position:
            continue  # inside a call already left out
        word = _NAME.match(text, start)
        name = word[0] if word else ""
        dot = _skip_gaps(text, start)
        if name in _LOG_FUNCTIONS:
            if dot > 0 and text[dot - 1] == ".":
                continue  # a method of that name: no log call
        elif name in _LOG_RECEIVERS or name.endswith("logger"):
            while dot > 0 and text[dot - 1] == ".":  # the receiver's owners: self.logger.info(...)
                owner_end = _skip_gaps(text, dot - 1)
                owner = _word_start(text, owner_end)
                found = _NAME.match(text, owner)
                if owner == owner_end or found is None or found.end() != owner_end or owner < position:
                    break
                start, dot = owner, _skip_gaps(text, owner)
        else:
            continue
        depth, end = 1, len(text)
        for bracket in _BRACKET.finditer(text, match.end()):
            depth += 1 if bracket[0] in "([{" else -1
            if depth == 0:
                end = bracket.end()
                break
        kept += [text[position:start], " "]
        position = end
    kept.append(text[position:])
    return "".join(kept)


def _skip_gaps(text: str, index: int) -> int:
    """Where the gaps before ``text[index]`` start."""
    while index > 0 and text[index - 1] in _GAPS:
        index -= 1
    return index


def _word_start(text: str, index: int) -> int:
    """Where the word that ends just before ``text[index]``, or holds it, starts."""
    while index > 0 and (text[index - 1].isalnum() or text[index - 1] == "_"):
        index -= 1
    return index


def _sides(hunk: Hunk, language: _Language) -> tuple[str, str]:
    """The old and the new side of a hunk (context included), comments and strings blanked."""
    old, new = (language.quoted.sub(" ", "".join(hunk.lines_of(kinds))) for kinds in (" -", " +"))
    return old, new


def _same_characters(sides: tuple[str, str]) -> bool:
    """Whether the sides could differ only by what `_canonical` undoes: the same characters, in
    any order, once whitespace, commas, parentheses and line continuations are left out (else,
    only changed imports may be, `_imports_only`: they may be split and merged)."""
    old, new = (side.translate(_REFORMAT_NOISE) for side in sides)
    return len(old) == len(new) and Counter(old) == Counter(new)  # the lengths first: they are free


def _imports_only(hunk: Hunk) -> bool:
    """Whether the hunk changes lines and every changed line is part of an import (or include)."""
    changed = hunk.lines_of("+-")
    return bool(changed) and all(_IMPORT_LINE.match(text) for text in changed)


def _same_names(sides: tuple[str, str]) -> bool:
    """Whether both sides use the same names, however often: what a block of imports keeps when
    it is only reordered, merged or split (a module named once for two names, or twice), and so
    what `_canonical` needs of imports that the other tests cannot compare. Names an import adds
    or drops fail here without tokens."""
    old, new = sides
    return set(_NAME.findall(old)) == set(_NAME.findall(new))


# Characters that neither `_may_match` (names become one letter, whitespace goes) nor
# `_same_characters` (whitespace, commas, parentheses and backslashes go) takes away or adds.
_PUNCTUATION = "=.:[]{}+-*/%<>!&|^~@;?$`"


def _same_punctuation(sides: tuple[str, str]) -> bool:
    """Each of `_PUNCTUATION` as often on both sides: what `_may_match` and `_same_characters`
    both need, tested first because counting characters costs far less than either."""
    old, new = sides
    return all(old.count(char) == new.count(char) for char in _PUNCTUATION)


def _may_match(sides: tuple[str, str]) -> bool:
    """Whether the two sides of a hunk with no log call in sight could be the same code: once
    comments, strings and whitespace are gone, they must be equal but for names, and those must
    differ one-to-one. Regular expressions do the work, so most hunks need no tokens."""
    old, new = sides
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


# Paths met again and again (triage reads a file's changes in commit after commit), bounded
# against a hostile list of names.
_PATH_CACHE = 4096


@functools.lru_cache(maxsize=_PATH_CACHE)
def _language_of(path: str) -> _Language | None:
    """How to read the file at ``path``, by its suffix (None: a language not known here)."""
    return _LANGUAGES.get(PurePosixPath(path).suffix.lower())


@functools.lru_cache(maxsize=_PATH_CACHE)
def comment_markers(path: str) -> tuple[str, ...]:
    """What starts a comment in the file at ``path`` (none for a language not known here)."""
    language = _language_of(path)
    if language is None:
        return ()
    return ("#",) if language.lexer.pattern.startswith("(?P<comment>#") else ("//", "/*")


def is_code_line(text: str, markers: tuple[str, ...]) -> bool:
    """Whether a line holds code: not blank, and not only a comment (``markers``: `comment_markers`)."""
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith(markers or ("\0",))


def in_comment(text: str, offset: int, markers: tuple[str, ...]) -> bool:
    """Whether character ``offset`` of line ``text`` sits in a comment that starts on that line
    (a marker before it, outside any quotes)."""
    for marker in markers:
        at = text.find(marker)
        while 0 <= at < offset:
            before = text[:at]
            if before.count('"') % 2 == 0 and before.count("'") % 2 == 0:
                return True
            at = text.find(marker, at + 1)
    return False


def import_time_only(hunk: Hunk, start: int, end: int, markers: tuple[str, ...]) -> bool:
    """Whether the changed lines of code in lines ``start``..``end`` of ``hunk`` (at module level)
    are all import-time set-up that selects nothing: unconditional imports (or includes) of
    modules that are not kernels or backends, a logger, ``__all__``, type variables.

    Import-time code that selects what runs keeps its weight: an indented import (it sits in an
    ``if`` or ``try`` at module level: which implementation loads depends on the platform), an
    import or include naming a kernel or backend module (`_SELECTING_IMPORT`), and every other
    statement (a constant, an environment read, a registration, a condition)."""
    inside, found, statement = False, False, ""
    for index in range(end):  # from the hunk's start: an import's "(" may open before ``start``
        text = hunk.texts[index]
        head = bool(_IMPORT_HEAD.match(text))
        is_import = inside or head
        if head:
            statement = text  # a name of a list is judged with the module it comes from
        if head and "(" in text and ")" not in text:
            inside = True
        elif inside and ")" in text:
            inside = False
        if index < start or hunk.types[index] not in "+-" or not is_code_line(text, markers):
            continue
        if is_import:
            if (head and text[:1].isspace()) or _SELECTING_IMPORT.search(text if head else statement + text):
                return False
        elif not _IMPORT_TIME_STATEMENT.match(text):
            return False
        found = True
    return found


def classify(change: FileChange) -> list[Harmless | None]:
    """For each hunk of ``change``: why it is harmless, or None when it may change behaviour."""
    return HarmlessHunks(change).all()


def _code(hunk: Hunk, lexer: re.Pattern[str], side: str) -> list[_Token]:
    """The tokens of one side of ``hunk`` that are code (not comments or messages)."""
    tokens = _side_tokens(hunk, lexer, side)
    _mark_messages(tokens)
    return [t for t in tokens if not t.message]


# Python keywords: a bracket after one of them opens a display or a group, not a call.
_KEYWORDS = frozenset(keyword.kwlist)
# Soft keywords a bracket can follow: `match (x,):` and `case (a,):` take a one-element tuple, yet
# `match(x,)` and `match[a,]` may be a call and a subscript of a name, so a lone comma after one
# stays. (`_` and `type` are soft keywords too, but a bracket right after either is a call's or
# a subscript's; after a `.`, so is one after `match` or `case`.)
_SOFT_KEYWORDS = frozenset(keyword.softkwlist) - {"_", "type"}
_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_PLAIN_STRING = re.compile(r"""^([rRbBuUfF]{0,2})'([^'"\\\n]*)'$""")
# Statements whose parenthesised parts may hold a tuple that the parentheses make (assert (a, b)
# is always true), or that say something with them (with, except, def, class).
_KEEP_PARENTHESES = frozenset(
    {"assert", "with", "async", "except", "def", "class", "import", "from", "lambda", "@", "print", "exec"}
)


def _canonical(tokens: list[_Token], python: bool) -> list[object]:
    """What two sides of a hunk must share to be the same code: the tokens' keys once what
    formatters change is undone on both (optional trailing commas; in Python, line continuations,
    the quotes of plain strings, redundant parentheses around a statement part and the order of
    a block of imports; in C-like files, the order of a block of includes). Every step maps only
    forms that mean the same thing onto each other, so two sides that stay different here may
    still be the same code, never the reverse."""
    pairs = _pairs(tokens)
    heads = _statement_heads(tokens, python)
    owner = _statement_of(tokens, heads)
    # A backslash continues a Python line; elsewhere it may join a shell command or a macro.
    drop = {index for index, token in enumerate(tokens) if python and token.text == "\\"}
    for opener, closer in pairs.items():
        if (
            closer - 1 > opener
            and tokens[closer - 1].text == ","
            and _optional_comma(tokens, opener, closer, python)
        ):
            drop.add(closer - 1)
        if (
            python
            and tokens[opener].text == "("
            and closer > opener + 1
            and _redundant(tokens, opener, closer, heads, owner)
        ):
            drop.update((opener, closer))
    keys = {index: _key(token, python) for index, token in enumerate(tokens) if index not in drop}
    for head in heads:
        if head in drop:  # the statement's indentation passes to what now starts it
            following = next((i for i in range(head + 1, len(tokens)) if i in keys), None)
            if following is not None:
                keys[following] = (tokens[head].column, keys[following][1])
    spans = _spans(tokens, heads, python)
    canonical: list[object] = []
    number = 0
    while number < len(spans):
        kept = [index for index in range(*spans[number]) if index in keys]
        atoms = _imports(tokens, kept, python)
        if atoms is None:
            canonical += [keys[index] for index in kept]
            number += 1
            continue
        block, column = list(atoms), tokens[spans[number][0]].column
        number += 1
        while number < len(spans) and tokens[spans[number][0]].column == column:
            more = _imports(tokens, [i for i in range(*spans[number]) if i in keys], python)
            if more is None:
                break
            block += more
            number += 1
        canonical.append(("imports", column, tuple(sorted(block))))
    return canonical


def _key(token: _Token, python: bool) -> tuple[int, str]:
    column, text = token.key(python)
    if python and token.kind == "string":  # elsewhere 'a' may be a char, or a shell's literal
        plain = _PLAIN_STRING.match(text)
        if plain:  # 'x' and "x" are one string when neither quote nor escape is inside
            text = f'{plain[1]}"{plain[2]}"'
    return column, text


def _pairs(tokens: list[_Token]) -> dict[int, int]:
    """Opening bracket index -> its closing bracket's, for the brackets the hunk holds whole."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for index, token in enumerate(tokens):
        if token.text in _CLOSERS:
            stack.append(index)
        elif token.text in ")]}":
            if stack and _CLOSERS[tokens[stack[-1]].text] == token.text:
                pairs[stack.pop()] = index
            else:
                stack.clear()  # unbalanced: nothing opened before it can be paired safely
    return pairs


def _statement_heads(tokens: list[_Token], python: bool) -> list[int]:
    """Indices of the tokens that start a statement (Python: the first token of a logical line,
    or the one after a ``;``); none in other languages."""
    if not python:
        return []
    return [
        index
        for index, token in enumerate(tokens)
        if token.depth == 0
        and token.text not in ")]}"
        and (token.column >= 0 or (index > 0 and tokens[index - 1].text == ";"))
    ]


def _statement_of(tokens: list[_Token], heads: list[int]) -> list[int]:
    """For each token, the index of the head of its statement (-1 before the first head)."""
    owner, current, upcoming = [], -1, 0
    for index in range(len(tokens)):
        if upcoming < len(heads) and heads[upcoming] == index:
            current, upcoming = index, upcoming + 1
        owner.append(current)
    return owner


def _spans(tokens: list[_Token], heads: list[int], python: bool) -> list[tuple[int, int]]:
    """The token ranges of the statements (Python) or lines (elsewhere), the part before the
    first statement head included."""
    if python:
        starts = [0, *heads] if not heads or heads[0] != 0 else heads
    else:
        starts = [
            index for index, token in enumerate(tokens) if index == 0 or token.first > tokens[index - 1].last
        ]
    bounds = [*starts, len(tokens)]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _optional_comma(tokens: list[_Token], opener: int, closer: int, python: bool) -> bool:
    """Whether the comma before ``closer`` can go without changing the code: another comma at
    its level, a brace, a list display, a call's or definition's arguments, an import's names."""
    inner = tokens[opener].depth + 1
    if any(tokens[i].text == "," and tokens[i].depth == inner for i in range(opener + 1, closer - 1)):
        return True
    bracket = tokens[opener].text
    if bracket == "{":
        return True
    before = tokens[opener - 1] if opener > 0 else None
    if (
        before is not None
        and before.text in _SOFT_KEYWORDS
        and before.kind == "name"
        and (opener < 2 or tokens[opener - 2].text != ".")
    ):
        return False
    called = before is not None and (
        before.text in (")", "]") or (before.kind == "name" and before.text not in _KEYWORDS)
    )
    if bracket == "[":
        return python and not called  # a subscript's lone comma makes a tuple
    return python and (called or (before is not None and before.text == "import"))


def _redundant(tokens: list[_Token], opener: int, closer: int, heads: list[int], owner: list[int]) -> bool:
    """Whether the parentheses ``opener``..``closer`` (Python) enclose a whole part of a statement,
    where they change nothing: an assignment's target or value, what a return, yield or del takes,
    the condition of an if or while, a for loop's target or iterable, an import's name list."""
    before = tokens[opener - 1].text if opener > 0 else None
    if before == "import":
        return True
    head = owner[opener]
    if tokens[opener].depth != 0 or head < 0 or tokens[head].text in _KEEP_PARENTHESES:
        return False
    ends = closer + 1 == len(tokens) or closer + 1 in heads or tokens[closer + 1].text == ";"
    after = None if ends else tokens[closer + 1].text
    first = tokens[head].text
    if opener == head:
        return after in (None, "=")
    if before in ("=", "+=", "-=", "*=", "/="):
        return after in (None, "=")
    if before in ("return", "yield", "del"):
        return after is None
    if first in ("if", "elif", "while") and opener == head + 1:
        return after == ":"
    if first == "for":
        loop_in = next(
            (i for i in range(head + 1, len(tokens)) if tokens[i].text == "in" and tokens[i].depth == 0), None
        )
        return (opener == head + 1 and closer + 1 == loop_in) or (opener - 1 == loop_in and after == ":")
    return False


def _imports(tokens: list[_Token], kept: list[int], python: bool) -> list[tuple[str, ...]] | None:
    """The names one import statement (Python) or include line (elsewhere) brings in, as sortable
    atoms; None when the tokens are not one."""
    texts = [tokens[index].text for index in kept]
    if not texts:
        return None
    if not python:
        if texts[:2] == ["#", "include"] and len(texts) > 2:
            return [("include", " ".join(texts[2:]))]
        return None
    if texts[0] == "import":
        parts = _import_names(texts[1:], dotted=True)
        return None if parts is None else [("import", name, alias) for name, alias in parts]
    if texts[0] == "from" and "import" in texts:
        split = texts.index("import")
        module = "".join(texts[1:split])
        if not module or not all(t == "." or t.isidentifier() for t in texts[1:split]):
            return None
        parts = _import_names(texts[split + 1 :], dotted=False)
        return None if parts is None else [("from", module, name, alias) for name, alias in parts]
    return None


def _import_names(texts: list[str], dotted: bool) -> list[tuple[str, str]] | None:
    """``name [as alias], ...`` as (name, alias) pairs; None when ``texts`` is not such a list."""
    found = []
    for item in " ".join(texts).split(" , "):
        words = item.split()
        if len(words) >= 3 and words[-2] == "as" and words[-1].isidentifier():
            name, alias = " ".join(words[:-2]), words[-1]
        else:
            name, alias = item, ""
        parts = name.split()
        if dotted:
            valid = bool(parts) and all(
                p.isidentifier() if i % 2 == 0 else p == "." for i, p in enumerate(parts)
            )
        else:
            valid = len(parts) == 1 and (parts[0].isidentifier() or parts[0] == "*")
        if not valid:
            return None
        found.append(("".join(parts), alias))
    return found or None


def _side_tokens(hunk: Hunk, lexer: re.Pattern[str], side: str) -> list[_Token]:
    """The tokens of one side of ``hunk`` (its context and its ``side`` lines), each with the
    lines it spans and the brackets around it."""
    keep = hunk.indices_of(" " + side)
    texts = list(map(hunk.texts.__getitem__, keep))
    changed = list(map(side.__eq__, map(hunk.types.__getitem__, keep)))
    starts = [0, *itertools.accumulate(map(len, texts))][:-1]
    tokens: list[_Token] = []
    append, line_of = tokens.append, bisect.bisect_right
    previous_last, previous_text = -1, ""  # the last token's last line and text (none yet)
    for match in lexer.finditer("".join(texts)):
        kind = match.lastgroup
        if kind is None or kind == "comment":  # never None: every alternative is a named group
            continue
        begin, end = match.span()
        line = line_of(starts, begin) - 1
        last = line_of(starts, end - 1) - 1 if end - begin > 1 else line
        # A token that spans lines (a docstring) is changed if any of its lines is.
        touched = changed[line] if last == line else any(changed[line : last + 1])
        # A line continued with a backslash does not start a statement of its own.
        text = match[0]
        leads = not tokens or (previous_last < line and previous_text != "\\")
        append(_Token(kind, text, touched, line, last, begin - starts[line] if leads else -1))
        previous_last, previous_text = last, text
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
            for covered in tokens[start : end + 1]:
                covered.message = True
            index = end
        elif token.kind == "name" and token.text in _MESSAGE_STARTERS:
            for covered in tokens[index + 1 : _statement_end(tokens, index)]:
                if covered.kind == "string":
                    covered.message = True
        index += 1


def _alone(tokens: list[_Token], index: int) -> bool:
    """Whether the token is the only one on the lines it spans."""
    token = tokens[index]
    return (index == 0 or tokens[index - 1].last < token.first) and (
        index + 1 == len(tokens) or tokens[index + 1].first > token.last
    )


def _is_log_call(tokens: list[_Token], index: int) -> bool:
    text = tokens[index].text
    if text in _LOG_FUNCTIONS:  # a function, not a method of that name
        return (
            (index == 0 or tokens[index - 1].text != ".")
            and index + 1 < len(tokens)
            and tokens[index + 1].text == "("
        )
    if text in _LOG_RECEIVERS or text.endswith("logger"):
        return (
            index + 3 < len(tokens)
            and tokens[index + 1].text == "."
            and tokens[index + 2].kind == "name"
            and tokens[index + 3].text == "("
        )
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
        if token.depth < depth or (
            token.depth == depth and token.first > line and tokens[index - 1].last < token.first
        ):
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


def _confirmed(
    old_code: dict[int, list[_Token]], candidates: dict[int, dict[str, str]]
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
