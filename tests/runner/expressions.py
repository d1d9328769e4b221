"""GitHub Actions expressions (``${{ ... }}``), evaluated as GitHub documents them, for the tests that
check what a workflow's expressions come to: literals, context properties (``inputs.head-sha``),
``!``, ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``&&``, ``||`` (which return one of their operands,
not a boolean), parentheses and the functions ``format``, ``contains``, ``startsWith``, ``endsWith``.

Semantics, from GitHub's "Evaluate expressions in workflows and actions": falsy values are
``false``, ``0``, ``-0``, ``""`` and ``null``; ``==`` between strings ignores case; operands of
different types are compared as numbers (``null`` 0, booleans 0 or 1, strings parsed, else NaN);
``format`` replaces ``{N}`` with the Nth argument (``{{`` and ``}}`` escape braces).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

TOKEN = re.compile(
    r"""\s*(?:
    (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|0x[0-9a-fA-F]+)
  | '(?P<string>(?:[^']|'')*)'
  | (?P<op>&&|\|\||==|!=|<=|>=|[!<>(),.\[\]*])
  | (?P<name>[A-Za-z_][A-Za-z0-9_-]*)
)""",
    re.VERBOSE,
)
EMBEDDED = re.compile(r"\$\{\{\s*(.*?)\s*\}\}", re.DOTALL)


class ExpressionError(ValueError):
    pass


def evaluate(expression: str, contexts: Mapping[str, Any]) -> Any:
    """The value of one expression (without its ``${{ }}``)."""
    parser = _Parser(_tokens(expression), contexts)
    value = parser.either()
    if parser.peek() is not None:
        raise ExpressionError(f"unexpected {parser.peek()!r} in {expression!r}")
    return value


def interpolate(text: str, contexts: Mapping[str, Any]) -> Any:
    """A workflow value: the expression's value when the value is one ``${{ }}``, else the text
    with each expression replaced by its value as a string."""
    whole = EMBEDDED.fullmatch(text.strip())
    if whole:
        return evaluate(whole[1], contexts)
    return EMBEDDED.sub(lambda m: to_string(evaluate(m[1], contexts)), text)


def truthy(value: Any) -> bool:
    return not (
        value is None
        or value is False
        or value == ""
        or (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and (value == 0 or math.isnan(value))
        )
    )


def to_string(value: Any) -> str:
    if value is None:
        return ""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def to_number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text == "":
            return 0.0
        try:
            return float(int(text, 16)) if text.lower().startswith("0x") else float(text)
        except ValueError:
            return math.nan
    return math.nan


def equal(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold() == right.casefold()
    if type(left) is type(right) and not isinstance(left, (str, int, float, bool)) and left is not None:
        return left is right
    return to_number(left) == to_number(right)


def _tokens(expression: str) -> list[tuple[str, Any]]:
    found, position = [], 0
    while position < len(expression):
        if expression[position:].strip() == "":
            break
        match = TOKEN.match(expression, position)
        if not match:
            raise ExpressionError(f"cannot read {expression[position:]!r}")
        position = match.end()
        kind = match.lastgroup
        value = match[kind]
        if kind == "string":
            value = value.replace("''", "'")
        elif kind == "number":
            value = float(int(value, 16)) if value.lower().startswith("0x") else float(value)
        found.append((kind, value))
    return found


class _Parser:
    def __init__(self, tokens: list[tuple[str, Any]], contexts: Mapping[str, Any]):
        self.tokens, self.contexts, self.index = tokens, contexts, 0

    def peek(self) -> Any:
        return self.tokens[self.index][1] if self.index < len(self.tokens) else None

    def take(self, op: str | None = None) -> tuple[str, Any]:
        if self.index >= len(self.tokens):
            raise ExpressionError("unexpected end of expression")
        token = self.tokens[self.index]
        if op is not None and token != ("op", op):
            raise ExpressionError(f"expected {op!r}, got {token[1]!r}")
        self.index += 1
        return token

    def accept(self, op: str) -> bool:
        if self.index < len(self.tokens) and self.tokens[self.index] == ("op", op):
            self.index += 1
            return True
        return False

    def either(self) -> Any:
        value = self.both()
        while self.accept("||"):
            other = self.both()
            value = value if truthy(value) else other
        return value

    def both(self) -> Any:
        value = self.equality()
        while self.accept("&&"):
            other = self.equality()
            value = other if truthy(value) else value
        return value

    def equality(self) -> Any:
        value = self.comparison()
        while True:
            if self.accept("=="):
                value = equal(value, self.comparison())
            elif self.accept("!="):
                value = not equal(value, self.comparison())
            else:
                return value

    def comparison(self) -> Any:
        value = self.unary()
        for op in ("<=", ">=", "<", ">"):
            if self.accept(op):
                right = self.unary()
                if isinstance(value, str) and isinstance(right, str):
                    a, b = value.casefold(), right.casefold()
                else:
                    a, b = to_number(value), to_number(right)
                return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        return value

    def unary(self) -> Any:
        if self.accept("!"):
            return not truthy(self.unary())
        return self.primary()

    def primary(self) -> Any:
        kind, value = self.take()
        if kind == "op" and value == "(":
            inner = self.either()
            self.take(")")
            return inner
        if kind in ("number", "string"):
            return value
        if kind != "name":
            raise ExpressionError(f"unexpected {value!r}")
        if value in ("true", "false"):
            return value == "true"
        if value == "null":
            return None
        if self.accept("("):
            arguments = []
            if not self.accept(")"):
                arguments.append(self.either())
                while self.accept(","):
                    arguments.append(self.either())
                self.take(")")
            return _call(value, arguments)
        result = self.contexts.get(value)
        while True:
            if self.accept("."):
                _, name = self.take()
                result = result.get(name) if isinstance(result, Mapping) else None
            elif self.accept("["):
                key = self.either()
                self.take("]")
                result = result.get(key) if isinstance(result, Mapping) else None
            else:
                return result


def _call(name: str, arguments: list[Any]) -> Any:
    lowered = name.lower()
    if lowered == "format":
        template, *values = arguments

        def replace(match: re.Match) -> str:
            if match[0] == "{{":
                return "{"
            if match[0] == "}}":
                return "}"
            return to_string(values[int(match[1])])

        return re.sub(r"\{\{|\}\}|\{(\d+)\}", replace, to_string(template))
    if lowered == "contains":
        haystack, needle = arguments
        if isinstance(haystack, list):
            return any(equal(item, needle) for item in haystack)
        return to_string(needle).casefold() in to_string(haystack).casefold()
    if lowered == "startswith":
        return to_string(arguments[0]).casefold().startswith(to_string(arguments[1]).casefold())
    if lowered == "endswith":
        return to_string(arguments[0]).casefold().endswith(to_string(arguments[1]).casefold())
    raise ExpressionError(f"function {name} is not evaluated here")
