"""Which of a change's lines ran in a mapped step: each removed line of a file, and each place lines
were added, placed in the source of the map's commit and judged by the lines the map recorded
(`StepMap.ran`).

A removed line is judged by the statement holding it (a compound statement by its header: a change
inside ``if X is None:``'s body is not a change to the test). Added lines are judged by the
statement next to them in the block their indentation puts them in: the one before them, or the
first one of the block when they open it, so a ``raise`` added inside a first-call-only branch is
judged by that branch's code, not by the ``if`` above it. Statements that run no code of their own
(a docstring, ``global``), a function's signature and decorators (run when it is defined, and
whose defaults count on every call), comments and lines the block structure cannot place give no
evidence: the change keeps whatever weight the function has.

The source must be the one the map was measured on: a hunk whose old side does not match it line
for line gives no evidence.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bot.core.risk.diff import FileChange

_NO_CODE = (ast.Global, ast.Nonlocal)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True, slots=True)
class ChangedLine:
    """A changed place: the base line removed (``added`` False) or after which lines were added,
    the own name of the function holding it (None: module level), and whether it ran per step."""

    line: int
    added: bool
    function: str | None
    ran: bool


@dataclass(frozen=True, slots=True)
class _Block:
    statements: list[ast.stmt]
    column: int
    first: int
    reach: int  # the last line an added line of this block's indentation may follow
    function: str | None


def changed_lines(source: str, change: FileChange, ran: Callable[[int], bool | None]) -> list[ChangedLine]:
    """The changed places of ``change`` that the map's lines judge (``ran``: whether a base line
    ran, None when unknown), for a file whose text at the map's commit is ``source``; none when a
    hunk does not match that text or it does not parse."""
    lines = source.splitlines()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    if not all(_matches(hunk.texts, hunk.types, hunk.source_start, lines) for hunk in change.hunks):
        return []
    structure = _Structure(tree, lines)
    found: list[ChangedLine] = []
    for hunk in change.hunks:
        old = hunk.source_start - 1  # the base line the next line follows
        outer: int | None = None  # the smallest indentation of the added lines in a row so far
        for text, kind in zip(hunk.texts, hunk.types, strict=True):
            judged = None
            if kind == "-":
                judged = structure.removed(old + 1, ran)
            elif kind == "+" and text.strip() and not text.strip().startswith("#"):
                column = _indentation(text)
                if outer is None or column <= outer:  # deeper: inside something added, not the base's
                    judged = structure.added(old, text, ran)
                    outer = column
            if kind != "+":
                outer = None
            if kind in " -":
                old += 1
            if judged is not None and judged not in found:
                found.append(judged)
    return found


def _matches(texts: list[str], types: str, start: int, lines: list[str]) -> bool:
    number = start
    for text, kind in zip(texts, types, strict=True):
        if kind not in " -":
            continue
        if number < 1 or number > len(lines) or lines[number - 1] != text.rstrip("\r\n"):
            return False
        number += 1
    return True


class _Structure:
    """The statements and blocks of a parsed file."""

    def __init__(self, tree: ast.Module, lines: list[str]):
        self.lines = lines
        self.statements: list[tuple[ast.stmt, str | None]] = []
        self.blocks: list[_Block] = []
        self._walk(tree.body, None)

    def removed(self, line: int, ran: Callable[[int], bool | None]) -> ChangedLine | None:
        holding = [(s, f) for s, f in self.statements if _first(s) <= line <= (s.end_lineno or s.lineno)]
        if not holding:
            return None
        statement, function = max(holding, key=lambda item: _first(item[0]))
        body = _body(statement)
        if body and line >= body[0].lineno:
            return None  # between a compound statement's body lines: a comment, a blank, ``else:``
        if isinstance(statement, _FUNCTIONS):
            return None  # a signature or a decorator
        verdict = _ran(statement, ran)
        return None if verdict is None else ChangedLine(line, False, function, verdict)

    def added(self, after: int, text: str, ran: Callable[[int], bool | None]) -> ChangedLine | None:
        """The place of a line of code added after base line ``after`` (not blank, not a comment)."""
        column = _indentation(text)
        blocks = [b for b in self.blocks if b.column == column and b.first <= after + 1 and after <= b.reach]
        if not blocks:
            return None
        block = max(blocks, key=lambda b: b.first)
        before = [s for s in block.statements if (s.end_lineno or s.lineno) <= after and _runs(s)]
        after_ = [s for s in block.statements if _first(s) > after and _runs(s)]
        neighbour = before[-1] if before else (after_[0] if after_ else None)
        if neighbour is None:
            return None
        verdict = _ran(neighbour, ran)
        return None if verdict is None else ChangedLine(after, True, block.function, verdict)

    def _walk(self, body: list[ast.stmt], function: str | None) -> None:
        if not body:
            return
        last = body[-1].end_lineno or body[-1].lineno
        self.blocks.append(
            _Block(body, body[0].col_offset, _first(body[0]), self._reach(last, body[0].col_offset), function)
        )
        for statement in body:
            self.statements.append((statement, function))
            inner = statement.name if isinstance(statement, _FUNCTIONS) else function
            if isinstance(statement, ast.ClassDef):
                inner = None  # a class body runs once, where it is defined
            for nested in _bodies(statement):
                self._walk(nested, inner)

    def _reach(self, last: int, column: int) -> int:
        """The last line before the code that follows a block ending at ``last`` (at a shallower
        indentation), or the file's end."""
        for number in range(last + 1, len(self.lines) + 1):
            text = self.lines[number - 1]
            stripped = text.strip()
            if stripped and not stripped.startswith("#") and _indentation(text) < column:
                return number - 1
        return len(self.lines)


def _indentation(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def _bodies(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        value = getattr(statement, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value
    for handler in getattr(statement, "handlers", ()):
        yield handler.body
    for case in getattr(statement, "cases", ()):
        yield case.body


def _body(statement: ast.stmt) -> list[ast.stmt]:
    body = getattr(statement, "body", None)
    return body if isinstance(body, list) and body and isinstance(body[0], ast.stmt) else []


def _first(statement: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _runs(statement: ast.stmt) -> bool:
    """Whether a statement runs code of its own (a line event): not ``global``, not a docstring
    or another lone constant."""
    if isinstance(statement, _NO_CODE):
        return False
    return not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))


def _ran(statement: ast.stmt, ran: Callable[[int], bool | None]) -> bool | None:
    """Whether ``statement`` ran (a compound one: its header): any of its lines did; None when
    the lines are unknown or it runs no code of its own."""
    if not _runs(statement):
        return None
    body = _body(statement)
    last = body[0].lineno - 1 if body else (statement.end_lineno or statement.lineno)
    found = [ran(n) for n in range(_first(statement), max(last, statement.lineno) + 1)]
    if any(f is None for f in found):
        return None
    return any(found)
