"""The `/bench` grammar: find the one command a comment gives, and parse it.

A command counts only where a reader sees it as one: a line of a top-level paragraph that starts
with ``/bench`` (at most three spaces in), so never inside a quote, a list, a fenced or indented
code block, an HTML block, an inline code span, or in the middle of a line. The first such line
wins; the rest of the comment is not read. Comments are parsed as CommonMark, the core of what
GitHub renders, up to GitHub's own comment length, and a command line is bounded too.

    /bench [SUITE ...] [--rounds N] [--max-rounds N]
    /bench help | cancel | approve [SHA] | ack REASON
    /bench bisect GOOD BAD [SUITE ...] [--metric M]
    /bench dismiss CASE [REASON]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

from bot.core import metric_names
from bot.core.text import clip, printable

PREFIX = "/bench"
MAX_COMMENT = 65_536  # GitHub refuses longer comments; anything past it is not read
MAX_LINE = 500
MAX_SUITES = 20
SUITE_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_NUMBER = re.compile(r"[0-9]{1,9}")
_RAW_COMMAND = re.compile(r" {0,3}/bench(?:[ \t]|$)")
_BREAKS = ("softbreak", "hardbreak")
_SHA_PREFIX = re.compile(r"[0-9a-f]{7,40}")
_CASE_KEY = re.compile(r"case-[0-9a-f]{8,32}")
_NEWLINES = re.compile(r"\r\n?")
# CommonMark with GitHub's tables: a table row is never a command.
_MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])


@dataclass(frozen=True)
class Run:
    """`/bench [SUITE ...] [--rounds N] [--max-rounds N]`: benchmark base against head."""

    suites: tuple[str, ...] = ()
    rounds: int | None = None
    max_rounds: int | None = None


@dataclass(frozen=True)
class Help:
    """`/bench help`."""


@dataclass(frozen=True)
class Cancel:
    """`/bench cancel`: stop the pull request's running benchmark."""


@dataclass(frozen=True)
class Approve:
    """`/bench approve [SHA]`: let a fork's head commit reach the GPU runners; ``sha``: the head the
    approver names (a prefix of at least 7 hex digits), else the head of when they wrote it."""

    sha: str | None = None


@dataclass(frozen=True)
class Ack:
    """`/bench ack REASON`: a flagged regression is known and accepted."""

    reason: str


@dataclass(frozen=True)
class Bisect:
    """`/bench bisect GOOD BAD [SUITE ...] [--metric M]`: bisect a regression of the default branch
    between two of its commits (each 7 to 40 hex digits) on the GPU runners; ``metric`` None: each
    suite's headline metric."""

    good: str
    bad: str
    suites: tuple[str, ...] = ()
    metric: str | None = None


@dataclass(frozen=True)
class Invalid:
    """A `/bench` line that does not parse; ``problem`` says why, in one line (it may quote what
    was written: escape it before publishing)."""

    problem: str


@dataclass(frozen=True)
class Dismiss:
    """`/bench dismiss CASE [REASON]`: a regression case of the default branch is noise, or known
    and accepted: it ends (its bisect stopped) and no change beside it opens another. ``case``: the
    case's key, or its start (``case-`` and at least 8 of its hex digits)."""

    case: str
    reason: str = ""


Command = Run | Help | Cancel | Approve | Ack | Bisect | Dismiss | Invalid


def find(comment: str) -> Command | None:
    """The first command of ``comment``, parsed; None when it holds none."""
    line = command_line(comment)
    return None if line is None else parse(line)


def command_line(comment: str) -> str | None:
    """The text of the first line that is a command, as a reader sees it, or None."""
    text = comment[:MAX_COMMENT]
    if PREFIX not in text:
        return None
    # The line breaks and NULs the parser normalises, so that its line numbers index `source`.
    text = _NEWLINES.sub("\n", text).replace("\0", "\ufffd")
    source = text.split("\n")
    tokens = _MARKDOWN.parse(text)
    for position, token in enumerate(tokens):
        if token.type != "inline" or token.level != 1 or tokens[position - 1].type != "paragraph_open":
            continue  # only top-level paragraphs: not quotes, lists, tables or headings
        start, end = token.map or (0, 0)
        found = _first_command(token.children or [], source[start:end])
        if found is not None:
            return found
    return None


def _first_command(children: list[Token], raw_lines: list[str]) -> str | None:
    """The first rendered line of a paragraph that starts with the command, if its source line does
    too. Lines are counted by the breaks between them; once an inline code span or inline HTML has
    been seen in a paragraph whose rendered lines do not match its source lines (one spanned a line
    break), later lines cannot be placed and are not taken."""
    lines = _rendered_lines(children)
    placed = len(lines) == len(raw_lines)
    for index, line in enumerate(lines):
        starts = bool(line) and line[0].type == "text" and _starts_command(line[0].content)
        if starts and index < len(raw_lines) and _RAW_COMMAND.match(raw_lines[index]):
            return "".join(_source_text(t) for t in line).strip()
        if not placed and any(t.type in ("code_inline", "html_inline") for t in line):
            return None
    return None


def _source_text(token: Token) -> str:
    """A token of a command line as written: a code span keeps its backticks, so that it can never
    pass for a suite name."""
    if token.type == "code_inline":
        return f"{token.markup}{token.content}{token.markup}"
    return token.content


def _rendered_lines(children: list[Token]) -> list[list[Token]]:
    lines: list[list[Token]] = [[]]
    for child in children:
        if child.type in _BREAKS:
            lines.append([])
        else:
            lines[-1].append(child)
    return lines


def _starts_command(text: str) -> bool:
    return text.startswith(PREFIX) and (len(text) == len(PREFIX) or text[len(PREFIX)] in " \t")


def parse(line: str) -> Command:
    """Parse one command line (starting with ``/bench``)."""
    if len(line) > MAX_LINE:
        return Invalid(f"a /bench line may be at most {MAX_LINE} characters long")
    words = line[len(PREFIX) :].split()
    if not words:
        return Run()
    verb, rest = words[0], words[1:]
    if verb == "ack":
        reason = " ".join(rest)
        if not reason:
            return Invalid("/bench ack needs a reason: /bench ack REASON")
        return Ack(printable(reason, replacement=""))
    if verb == "approve":
        if len(rest) > 1 or (rest and not _SHA_PREFIX.fullmatch(rest[0].lower())):
            return Invalid("/bench approve takes at most a commit sha (7 to 40 hex digits) after it")
        return Approve(rest[0].lower() if rest else None)
    if verb == "bisect":
        return _bisect(rest)
    if verb == "dismiss":
        if not rest or not _CASE_KEY.fullmatch(rest[0].lower()):
            return Invalid("/bench dismiss needs a case: /bench dismiss case-1a2b3c4d [REASON]")
        return Dismiss(rest[0].lower(), printable(" ".join(rest[1:]), replacement=""))
    if verb in ("help", "cancel"):
        if rest:
            return Invalid(f"/bench {verb} takes nothing after it")
        bare: dict[str, Command] = {"help": Help(), "cancel": Cancel()}
        return bare[verb]
    return _run(words)


def _run(words: list[str]) -> Run | Invalid:
    suites: list[str] = []
    numbers: dict[str, int] = {}
    position = 0
    while position < len(words):
        word = words[position]
        if word.startswith("-"):
            option, _, value = word.partition("=")
            if option not in ("--rounds", "--max-rounds"):
                return Invalid(f"unknown option {_quote(option)} (options: --rounds N, --max-rounds N)")
            if not value:
                position += 1
                value = words[position] if position < len(words) else ""
            if not _NUMBER.fullmatch(value) or int(value) < 1:
                given = _quote(value or "(nothing)")
                return Invalid(f"{option} takes a whole number of rounds from 1, not {given}")
            numbers[option] = int(value)
        elif SUITE_NAME.fullmatch(word):
            if word not in suites:
                suites.append(word)
        else:
            return Invalid(
                f"{_quote(word)} is not a suite name (letters, digits, '.', '_' and '-', at most 64)"
            )
        position += 1
    if len(suites) > MAX_SUITES:
        return Invalid(f"at most {MAX_SUITES} suites at a time")
    return Run(tuple(suites), numbers.get("--rounds"), numbers.get("--max-rounds"))


_METRIC = metric_names.METRIC_NAME
_BISECT_USAGE = "/bench bisect GOOD BAD [SUITE ...] [--metric M]"


def _bisect(words: list[str]) -> Bisect | Invalid:
    shas: list[str] = []
    suites: list[str] = []
    metric: str | None = None
    position = 0
    while position < len(words):
        word = words[position]
        if word.startswith("-"):
            option, _, value = word.partition("=")
            if option != "--metric":
                return Invalid(f"unknown option {_quote(option)} of /bench bisect (options: --metric M)")
            if not value:
                position += 1
                value = words[position] if position < len(words) else ""
            if not _METRIC.fullmatch(value):
                return Invalid(
                    f"--metric takes a metric name ({metric_names.WHAT}), not {_quote(value or '(nothing)')}"
                )
            metric = value
        elif len(shas) < 2:
            if not _SHA_PREFIX.fullmatch(word.lower()):
                return Invalid(f"{_quote(word)} is not a commit sha (7 to 40 hex digits): {_BISECT_USAGE}")
            shas.append(word.lower())
        elif SUITE_NAME.fullmatch(word):
            if word not in suites:
                suites.append(word)
        else:
            return Invalid(
                f"{_quote(word)} is not a suite name (letters, digits, '.', '_' and '-', at most 64)"
            )
        position += 1
    if len(shas) < 2:
        return Invalid(f"/bench bisect needs a good and a bad commit: {_BISECT_USAGE}")
    if len(suites) > MAX_SUITES:
        return Invalid(f"at most {MAX_SUITES} suites at a time")
    return Bisect(shas[0], shas[1], tuple(suites), metric)


def _quote(word: str) -> str:
    return "'" + clip(printable(word, replacement=""), 40) + "'"
