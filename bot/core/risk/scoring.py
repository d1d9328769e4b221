"""Score a parsed diff 0-100 for risk to inference hot paths, with reasons a reviewer can check.

Every signal is a rule that fired at a place (file, function, line); a rule counts once however
often it fires, and a place counts once however many rules of one category say the same thing
about it (the strongest gives the reason and names the others). A file's score and the whole
diff's score combine the rules as chances of a slowdown (noisy-OR): rules of different
categories (communicator, CUDA graph, attention...) or kinds (file, function, line) as
independent chances, rules of one category and kind as corroboration, each further one at half
the weight of the one before. So a communicator *and* a CUDA-graph runner count more than
either, and a change inside `all_reduce` of `pynccl.py` more than one elsewhere in that file.
Size and spread add a few points, never the main part.

What changed in a file tempers its signals: code that only runs at start-up (constructors,
weight loading, argument parsing: the `setup` rules) keeps the share of weight its rule gives;
hunks that change no code (comments, docstrings, log messages, blank lines, what formatters change:
see `changes`) add nothing, not even to the size, and renames keep a quarter. A reason names the
first changed line of code, never a blank or comment line. Version moves of the runtime stack in
manifests are their own rules (`dependency`), with the versions in the reason.

Direction counts for what a hot path pays on every step: a host sync, an allocation or copy, a
stream or event (`IMPROVES_WHEN_REMOVED`). Per function and rule, occurrences removed and added
cancel out; more added is risk, more removed is a *possible improvement*, listed and weighed apart
(`RiskReport.improvements`, `RiskReport.improvement`) and never added to the score.
Cold files (docs, tests, CI, diffusion-only trees) add nothing.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypedDict, TypeVar

from bot.core.config import CONFIG_PATH, patterns
from bot.core.config.rules import Rule
from bot.core.risk import changes, manifests
from bot.core.risk.diff import FileChange, Hunk, ParsedDiff
from bot.core.risk.ruleset import RuleSet

SourceLookup = Callable[[str], list[str] | None]
# What a match over a file's joined hunks carries besides where it is and what it matched: the
# name a ``def`` defines, the index of a token rule.
_Label = TypeVar("_Label")
# Where a signal fired, as far as its category is concerned (see `_place`).
_Place = tuple[str | int | None, ...]

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)")
# Over whole files: a pattern that starts with a literal lets `re` jump between candidates,
# many times faster than one that starts with `^` or an alternation.
_DEF_KEYWORDS = (re.compile(r"def[ \t]+(\w+)"), re.compile(r"class[ \t]+(\w+)"))
_HEADER_DEF = re.compile(r"(?:def|class)\s+(\w+)")
_HEADER_CALL = re.compile(r"(\w+)\s*\(")
_SIZE_CAP = 10.0
# The share of its weight a signal keeps when it sits in a hunk that changes no behaviour.
HARMLESS_SHARE = 0.25
# Files of one diff that are scored; beyond, a warning says how many were left out.
MAX_FILES = 10_000
# Categories of token rules whose removal takes work off the hot path instead of adding it.
IMPROVES_WHEN_REMOVED = frozenset({"host-sync", "allocation", "streams"})
# Token rules of a category whose removed and added occurrences cancel out (a pin rewritten with
# another version: the `dependency` rule says what moved), what is left counting as risk.
NETTED = frozenset({"dependency"})
# How a reason names changed imports among the set-up code of a file.
IMPORTS = "imports"


class SignalDict(TypedDict):
    """A `Signal` as JSON (`perfbot score --format json`)."""

    rule: str
    kind: str
    category: str
    weight: float
    path: str
    function: str | None
    line: int | None
    side: str
    match: str | None
    count: int
    also: list[str]
    note: str | None
    full_weight: float | None
    reason: str


class FileRiskDict(TypedDict):
    """A `FileRisk` as JSON."""

    path: str
    old_path: str | None
    status: str
    binary: bool
    added: int
    removed: int
    score: int
    cold: str | None
    reasons: list[str]


class RiskReportDict(TypedDict):
    """A `RiskReport` as JSON."""

    score: int
    level: str
    profile: str
    files: list[FileRiskDict]
    reasons: list[str]
    signals: list[SignalDict]
    warnings: list[str]
    notes: list[str]
    improvement: int
    improvements: list[str]


@dataclass(frozen=True, slots=True)
class Signal:
    """A rule that fired at one place. ``line`` is on the new side unless ``side`` is 'old'."""

    rule: str
    kind: str
    category: str
    weight: float
    description: str
    path: str
    function: str | None
    line: int | None
    side: str = "new"
    match: str | None = None
    count: int = 1
    # Other rules of the same category that fired at the same place, named instead of counted.
    also: tuple[str, ...] = ()
    # Why the signal keeps less than its rule's weight (``full_weight``), when it does.
    note: str | None = None
    full_weight: float | None = None

    def what(self) -> str:
        """The rule's description with what it matched: a token, or a version change."""
        return describe(self)

    def qualifier(self) -> str:
        """What follows the rule id and weight: a lowered weight and why, the rules also met."""
        text = ""
        if self.full_weight is not None:
            text += f" of {self.full_weight:g}: {self.note}"
        if self.also:
            text += f"; also {', '.join(self.also)}"
        return text

    @property
    def improves(self) -> bool:
        """A possible improvement (a removed sync, copy or allocation), not a risk."""
        return self.side == "old" and self.kind == "token" and self.category in IMPROVES_WHEN_REMOVED

    def sentence(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.function:
            where += f" in {self.function}()"
        elif self.line is not None:
            where += " at module level"
        if self.improves:
            return (f"possible improvement: {self.what()} [{self.rule}, {self.weight:g} apart from "
                    f"the score{self.qualifier()}] at {where}")
        return f"{self.what()} [{self.rule}, +{self.weight:g}{self.qualifier()}] at {where}"

    def to_dict(self) -> SignalDict:
        return {"rule": self.rule, "kind": self.kind, "category": self.category,
                "weight": self.weight, "path": self.path, "function": self.function,
                "line": self.line, "side": self.side, "match": self.match, "count": self.count,
                "also": list(self.also), "note": self.note, "full_weight": self.full_weight,
                "reason": self.sentence()}


def _as_is(text: str) -> str:
    return text


def describe(signal: Signal, text: Callable[[str], str] = _as_is,
             code: Callable[[str], str] | None = None) -> str:
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


@dataclass(slots=True)
class FileRisk:
    path: str
    old_path: str | None
    status: str
    is_binary: bool
    added: int
    removed: int
    score: int
    cold: str | None
    signals: list[Signal]
    damaged: str | None = None
    # Changed lines of code: outside cosmetic hunks, neither blank nor only a comment.
    code_lines: int = 0
    improvements: list[Signal] = field(default_factory=list)

    def to_dict(self) -> FileRiskDict:
        return {"path": self.path, "old_path": self.old_path, "status": self.status,
                "binary": self.is_binary, "added": self.added, "removed": self.removed,
                "score": self.score, "cold": self.cold,
                "reasons": [s.sentence() for s in self.signals]}


@dataclass(slots=True)
class RiskReport:
    score: int
    level: str
    profile: str
    files: list[FileRisk]
    signals: list[Signal]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Possible improvements (removed syncs, copies, allocations), weighed apart from the score.
    improvements: list[Signal] = field(default_factory=list)
    improvement: int = 0

    @property
    def reasons(self) -> list[str]:
        return [s.sentence() for s in self.signals]

    def to_dict(self) -> RiskReportDict:
        return {"score": self.score, "level": self.level, "profile": self.profile,
                "files": [f.to_dict() for f in self.files], "reasons": self.reasons,
                "signals": [s.to_dict() for s in self.signals],
                "warnings": self.warnings, "notes": self.notes,
                "improvement": self.improvement,
                "improvements": [s.sentence() for s in self.improvements]}


def score(diff: ParsedDiff, rules: RuleSet, source: SourceLookup | None = None) -> RiskReport:
    """Score ``diff`` against ``rules``; ``source`` may supply a changed file's new text."""
    warnings = list(diff.warnings)
    scored = diff.files[:MAX_FILES]
    if len(diff.files) > MAX_FILES:
        warnings.append(f"{len(diff.files):,} files changed: only the first {MAX_FILES:,} "
                        "were scored")
    long = sum(1 for change in scored if not patterns.matchable(change.path))
    if long:
        warnings.append(f"{long} path(s) longer than {patterns.MAX_PATH_LENGTH:,} characters "
                        "were not matched against path rules")
    files = [score_file(change, rules, source) for change in scored]
    signals = _strongest_per_rule(s for f in files for s in f.signals)
    improvements = _strongest_per_rule(s for f in files for s in f.improvements)
    size = _size_signal(files)
    if size is not None:
        signals.append(size)
    total = _combine(signals)
    files.sort(key=lambda f: (-f.score, f.cold is not None, f.path))
    notes = []
    if any(f.path == CONFIG_PATH or f.old_path == CONFIG_PATH for f in files):
        notes.append(f"this change edits {CONFIG_PATH}; config changes take effect after merge "
                     "and do not affect this score")
    return RiskReport(total, rules.thresholds.level(total), rules.profile, files, signals,
                      warnings, notes, improvements, _combine(improvements))


def score_file(change: FileChange, rules: RuleSet, source: SourceLookup | None = None) -> FileRisk:
    cold = rules.for_path(change.path)[0]
    signals: list[Signal] = []
    improvements: list[Signal] = []
    code_lines = 0
    if cold is None:
        signals, code_lines = _file_signals(change, rules, source)
        improvements = [s for s in signals if s.improves]
        signals = [s for s in signals if not s.improves]
    signals = _strongest_per_rule(_one_per_place(signals))
    return FileRisk(change.path, change.old_path, change.status, change.is_binary, change.added,
                    change.removed, _combine(signals),
                    cold.id if cold else None, signals, change.damaged, code_lines,
                    _strongest_per_rule(_one_per_place(improvements)))


def _file_signals(change: FileChange, rules: RuleSet, source: SourceLookup | None
                  ) -> tuple[list[Signal], int]:
    """The signals of a warm file (possible improvements among them), and its changed lines of
    code outside cosmetic hunks."""
    _, path_rules, allowed = rules.for_path(change.path)
    lookup = _Lazy(source, change.path)
    harmless = changes.HarmlessHunks(change)
    markers = changes.comment_markers(change.path)
    texts = [hunk.joined() for hunk in change.hunks]
    starts = [0, *itertools.accumulate(map(len, texts))]
    whole = "".join(texts)
    defs = _by_hunk(starts, _definitions(whole))
    tokens = _by_hunk(starts, _tokens(rules, whole)) if any(allowed) else {}
    found: list[_Found] = []
    edited: list[tuple[int, _Segment]] = []
    first: tuple[str | None, int | None, str] | None = None
    first_imports = False
    code_lines = 0
    for number, hunk in enumerate(change.hunks):
        reason = harmless(number)
        if reason is not None and reason.kind == "cosmetic":
            continue  # the same code: nothing in it can be a reason
        code_lines += sum(1 for text, kind in zip(hunk.texts, hunk.types, strict=True)
                          if kind in "+-" and changes.is_code_line(text, markers))
        segments = _segments(hunk, defs.get(number, ()), lookup)
        changed = [(seg, at) for seg in segments
                   if (at := _first_code_change(hunk, seg.start, seg.end, markers)) is not None]
        for seg, _ in changed:
            seg.imports = seg.name is None and changes.imports_only(hunk, seg.start, seg.end, markers)
        steps = [(seg, at) for seg, at in changed if not seg.imports]
        if (first is None or first_imports) and changed:
            seg, at = (steps or changed)[0]
            first, first_imports = (seg.name, hunk.line_number(at), _side(hunk, at)), not steps
        for seg, at in changed:
            found += [_Found(s, number) for s in _function_signals(rules, change.path, hunk, seg, at)]
            edited.append((number, seg))
        if number in tokens:
            found += _token_signals(rules, change.path, hunk, number, segments, tokens[number],
                                    bool(path_rules), allowed, markers)
    moved = _dependency_signals(change, rules)
    found = _net_of_removals(found, netted=NETTED if moved else frozenset())
    function, line, side = first or (None, None, "new")
    paths = [Signal(r.id, r.kind, r.category, r.weight, r.description, change.path, function,
                    line, side) for r in path_rules] if first is not None or not change.hunks else []
    signals = _tempered(change, rules, found, paths, edited, harmless) if found or paths else []
    return signals + moved, code_lines


def _first_code_change(hunk: Hunk, start: int, end: int, markers: tuple[str, ...]) -> int | None:
    """The first added or removed line of ``start``..``end`` that holds code (not blank, not only
    a comment), or None."""
    for index in range(start, end):
        if hunk.types[index] in "+-" and changes.is_code_line(hunk.texts[index], markers):
            return index
    return None


def _net_of_removals(found: list[_Found], netted: frozenset[str] = frozenset()) -> list[_Found]:
    """Token signals of `IMPROVES_WHEN_REMOVED` categories, netted per function and rule:
    occurrences removed and added cancel out (a rewritten line keeps its sync); what is left is
    added risk, or removed work (a possible improvement, `Signal.improves`). Categories in
    ``netted`` (pins, where a `dependency` rule already read the version move) cancel alike, and
    what is left of them stays risk."""
    directed: dict[tuple[str | None, str], list[_Found]] = {}
    kept: list[_Found] = []
    for item in found:
        signal = item.signal
        if signal.kind == "token" and signal.category in IMPROVES_WHEN_REMOVED | netted:
            directed.setdefault((signal.function, signal.rule), []).append(item)
        else:
            kept.append(item)
    for items in directed.values():
        added = [i for i in items if i.signal.side != "old"]
        removed = [i for i in items if i.signal.side == "old"]
        net = len(added) - len(removed)
        kept += added[:net] if net > 0 else removed[:-net]  # a pin dropped stays a risk
    return kept


@dataclass(slots=True)
class _Found:
    """A function or token signal, with the hunk it fired in and, for a token, whether it sits
    in a set-up function (and which rule says so)."""

    signal: Signal
    hunk: int
    setup: Rule | None = None


def _tempered(change: FileChange, rules: RuleSet, found: list[_Found], paths: list[Signal],
              edited: list[tuple[int, _Segment]], harmless: changes.HarmlessHunks) -> list[Signal]:
    """The signals of one file with their weights lowered where the change cannot matter much:
    in hunks that only rename, or only in set-up code (cosmetic hunks gave none)."""
    signals = []
    for item in found:
        reason = harmless(item.hunk)
        if reason is not None:
            signals.append(_lowered(item.signal, HARMLESS_SHARE, reason.describe()))
        elif item.setup is not None:
            signals.append(_lowered(item.signal, item.setup.weight / 100,
                                    f"in set-up code ({_short(item.signal.function)}())"))
        else:
            signals.append(item.signal)
    if paths:
        share, why = _file_share(rules, harmless, edited)
        signals += [_lowered(s, share, why) for s in paths] if why else paths
    return signals


def _file_share(rules: RuleSet, harmless: changes.HarmlessHunks,
                edited: list[tuple[int, _Segment]]) -> tuple[float, str | None]:
    """The share of their weight a file's path rules keep, and why (None: all of it).

    Hunks are judged in order and only until one changes code outside set-up functions: then
    the file's rules keep all their weight, and the rest need not be looked at.
    """
    setups: list[tuple[str, Rule]] = []
    by_hunk: dict[int, list[_Segment]] = {}
    for number, seg in edited:
        by_hunk.setdefault(number, []).append(seg)
    reasons: list[changes.Harmless] = []
    for number in range(harmless.hunks):
        reason = harmless(number)
        if reason is not None:
            if reason.kind != "cosmetic":
                reasons.append(reason)
            continue
        for seg in by_hunk.get(number, ()):
            if seg.imports and rules.setups:  # imports run once, when the module loads
                setups.append((IMPORTS, rules.setups[0][0]))
                continue
            rule = rules.setup_rule(seg.name) if seg.name else None
            if not seg.name or rule is None:
                return 1.0, None
            setups.append((seg.name, rule))
    if setups:
        names = list(dict.fromkeys(name for name, _ in setups))
        shown = ", ".join(name if name == IMPORTS else f"{_short(name)}()" for name in names[:3]) + (
            f" and {len(names) - 3} more" if len(names) > 3 else "")
        return min(rule.weight for _, rule in setups) / 100, f"only set-up code changed: {shown}"
    if reasons:  # renames, and maybe cosmetic hunks, and no other change of code
        renames = [pair for reason in reasons for pair in reason.renames]
        return HARMLESS_SHARE, changes.Harmless("rename", tuple(dict.fromkeys(renames))).describe()
    return 1.0, None


def _short(name: str | None, limit: int = 60) -> str:
    """A name from the diff, cut to fit in a reason."""
    name = name or ""
    return name if len(name) <= limit else name[:limit - 3] + "..."


def _lowered(signal: Signal, share: float, why: str) -> Signal:
    if share >= 1.0:
        return signal
    return dataclasses.replace(signal, weight=round(signal.weight * share, 1), note=why,
                               full_weight=signal.weight)


def _dependency_signals(change: FileChange, rules: RuleSet) -> list[Signal]:
    """Version moves of the packages that dependency rules name, in the manifests they read."""
    readers = rules.dependency_rules(change.path)
    if not readers:
        return []
    moved = manifests.version_changes(change)
    signals = []
    for rule, names in readers:
        hits = [v for v in moved if names.match(v.name)]
        if hits:
            shown = "; ".join(v.describe() for v in hits[:3])
            if len(hits) > 3:
                shown += f" and {len(hits) - 3} more"
            signals.append(Signal(rule.id, rule.kind, rule.category, rule.weight,
                                  rule.description, change.path, None, hits[0].line, "new",
                                  shown, len(hits)))
    return signals


def _by_hunk(starts: list[int], found: Iterable[tuple[int, str, _Label]]
             ) -> dict[int, list[tuple[int, str, _Label]]]:
    """Matches over a file's joined hunks, handed to their hunks with hunk-relative offsets."""
    by_hunk: dict[int, list[tuple[int, str, _Label]]] = {}
    for offset, text, label in found:
        hunk = bisect.bisect_right(starts, offset) - 1
        by_hunk.setdefault(hunk, []).append((offset - starts[hunk], text, label))
    return by_hunk


def _definitions(text: str) -> list[tuple[int, str, str]]:
    """(offset of the line, the line, the name) of each ``def``/``class`` that starts a line."""
    found = []
    for keyword in _DEF_KEYWORDS:
        for match in keyword.finditer(text):
            line = text.rfind("\n", 0, match.start()) + 1
            if text[line:match.start()].strip() in ("", "async"):
                found.append((line, match[0], match[1]))
    found.sort()
    return found


def _tokens(rules: RuleSet, text: str) -> Iterator[tuple[int, str, int]]:
    """(offset, matched text, token rule index) of each token match, from one RE2 scan.

    ASCII text (most code) goes in as bytes: offsets are the same, and RE2 has nothing to
    re-encode or map back.
    """
    if rules.token_regex is None:
        return
    matches: Iterator[patterns.Match] = (
        rules.token_regex.finditer(text.encode("ascii")) if text.isascii()
        else rules.token_regex.finditer(text))
    for match in matches:
        start, end = match.span()
        yield start, text[start:end], rules.token_rule(match)


@dataclass(slots=True)
class _Segment:
    """Lines ``start``..``end`` of a hunk that sit in one function (``name``)."""

    name: str | None
    start: int
    end: int
    first_changed: int | None
    hot: bool = False
    imports: bool = False  # at module level, and its changed code is only imports


def _segments(hunk: Hunk, defs: Sequence[tuple[int, str, str]], lookup: _Lazy) -> list[_Segment]:
    bounds: list[tuple[int, str | None]] = [(0, _header_function(hunk, lookup))]
    for offset, _, name in defs:
        index = hunk.line_at(offset)
        if index == 0:
            bounds[0] = (0, name)
        else:
            bounds.append((index, name))
    ends = [start for start, _ in bounds[1:]] + [len(hunk.types)]
    segments = []
    for (start, function), end in zip(bounds, ends, strict=True):
        segments.append(_Segment(function, start, end, _first_changed(hunk.types, start, end)))
    return segments


def _first_changed(types: str, start: int, end: int) -> int | None:
    plus, minus = types.find("+", start, end), types.find("-", start, end)
    found = [i for i in (plus, minus) if i >= 0]
    return min(found) if found else None


def _header_function(hunk: Hunk, lookup: _Lazy) -> str | None:
    lines = lookup.get()
    if lines is not None:
        start = _first_changed(hunk.types, 0, len(hunk.types))
        if start is not None:
            # Where the change sits in the new file (a deletion: the line that now follows it).
            before = hunk.types[:start]
            name = enclosing_function(lines, hunk.target_start + before.count(" ") + before.count("+"))
            if name:
                return name
    match = _HEADER_DEF.search(hunk.section) or _HEADER_CALL.search(hunk.section)
    return match[1] if match else None


def enclosing_function(lines: list[str], line_number: int) -> str | None:
    """Name of the innermost ``def``/``class`` that holds 1-based ``line_number``."""
    if not 1 <= line_number <= len(lines):
        return None
    target = lines[line_number - 1]
    indent = _indent(target) if target.strip() else None
    for text in reversed(lines[: line_number - 1]):
        match = _DEF.match(text)
        if match and (indent is None or len(match[1].expandtabs()) < indent):
            return match[2]
        if text.strip() and not text.lstrip().startswith(("#", "@", ")")) and indent is not None:
            indent = min(indent, _indent(text))
    return None


def _indent(text: str) -> int:
    """The indentation of a line in columns, tabs expanded (as `_DEF`'s is measured)."""
    expanded = text.expandtabs()
    return len(expanded) - len(expanded.lstrip())


def _function_signals(rules: RuleSet, path: str, hunk: Hunk, seg: _Segment,
                      first_changed: int) -> list[Signal]:
    if not seg.name:
        return []
    found = rules.function_rules(seg.name)
    seg.hot = bool(found)
    line = hunk.line_number(first_changed)
    side = _side(hunk, first_changed)
    return [Signal(r.id, r.kind, r.category, r.weight, r.description, path, seg.name, line, side)
            for r in found]


def _token_signals(rules: RuleSet, path: str, hunk: Hunk, hunk_number: int,
                   segments: list[_Segment], matches: list[tuple[int, str, int]], hot_file: bool,
                   allowed: list[bool], markers: tuple[str, ...] = ()) -> list[_Found]:
    found = []
    starts = [seg.start for seg in segments]
    offsets = hunk.offsets()
    for offset, text, number in matches:
        index = hunk.line_at(offset)
        if hunk.types[index] not in "+-":
            continue
        if changes.in_comment(hunk.texts[index], offset - offsets[index], markers):
            continue  # a sync in a comment costs nothing
        rule = rules.tokens[number]
        seg = segments[bisect.bisect_right(starts, index) - 1]
        if not allowed[number] or (rule.scope == "hot" and not (hot_file or seg.hot)):
            continue
        signal = Signal(rule.id, rule.kind, rule.category, rule.weight, rule.description, path,
                        seg.name, hunk.line_number(index), _side(hunk, index), text.strip()[:80])
        found.append(_Found(signal, hunk_number, rules.setup_rule(seg.name) if seg.name else None))
    return found


def _side(hunk: Hunk, index: int) -> str:
    return "old" if hunk.types[index] == "-" else "new"


def _one_per_place(signals: list[Signal]) -> list[Signal]:
    """One signal per place and category: the strongest, naming the other rules there.

    A place is the file for path rules, the function for function rules, and the line for
    token and dependency rules: rules of one category that fire there say the same thing.
    """
    best: dict[_Place, Signal] = {}
    others: dict[_Place, list[str]] = {}
    for signal in signals:
        key = _place(signal)
        kept = best.get(key)
        if kept is None:
            best[key], others[key] = signal, []
        elif signal.rule == kept.rule:
            best[key] = _with_count(kept, kept.count + signal.count)
        elif signal.weight > kept.weight:
            best[key] = signal
            others[key].append(kept.rule)
        else:
            others[key].append(signal.rule)
    merged = []
    for key, signal in best.items():
        also = tuple(dict.fromkeys(r for r in others[key] if r != signal.rule))
        merged.append(dataclasses.replace(signal, also=also) if also else signal)
    return merged


def _place(signal: Signal) -> _Place:
    if signal.kind == "path":
        return ("file", signal.category)
    if signal.kind == "function":
        return ("function", signal.function, signal.category)
    if signal.kind in ("token", "dependency"):
        return ("line", signal.line, signal.side, signal.category)
    return (signal.kind, signal.rule)


def _strongest_per_rule(signals: Iterable[Signal]) -> list[Signal]:
    """One signal per rule: the heaviest, earliest one, counting how often the rule fired."""
    best: dict[str, Signal] = {}
    counts: dict[str, int] = {}
    for signal in signals:
        counts[signal.rule] = counts.get(signal.rule, 0) + signal.count
        kept = best.get(signal.rule)
        if kept is None or signal.weight > kept.weight:
            best[signal.rule] = signal
    merged = [_with_count(s, counts[s.rule]) for s in best.values()]
    merged.sort(key=lambda s: (-s.weight, s.path, s.line or 0, s.rule))
    return merged


def _with_count(signal: Signal, count: int) -> Signal:
    return signal if count == signal.count else dataclasses.replace(signal, count=count)


def _size_signal(files: list[FileRisk]) -> Signal | None:
    """A few points for the amount of changed code in warm files (cosmetic hunks, blank and
    comment lines left out): more code, more chances to regress."""
    warm = [f for f in files if f.cold is None and f.code_lines]
    lines = sum(f.code_lines for f in warm)
    if not warm or lines == 0:
        return None
    weight = round(min(_SIZE_CAP, 2.5 * math.log10(1 + lines) + 0.5 * (len(warm) - 1)), 1)
    largest = max(warm, key=lambda f: f.code_lines)
    noun = "file" if len(warm) == 1 else "files"
    return Signal("size", "size", "size", weight,
                  f"size: {lines} changed lines of code in {len(warm)} non-cold {noun}",
                  largest.path, None, None)


def _combine(signals: Iterable[Signal]) -> int:
    """Noisy-OR over categories and kinds, as a 0-100 integer.

    Signals of one category and kind corroborate each other rather than being independent
    chances (two communicator files are one hot area, touched twice), so within them the
    strongest counts fully, the next at half its weight, the next at a quarter, and so on.
    Kinds are different evidence: that a file is a communicator, that the change sits in its
    collective, that a line adds a host sync.
    """
    by_category: dict[tuple[str, str], list[float]] = {}
    for s in signals:
        by_category.setdefault((s.category, s.kind), []).append(
            min(max(s.weight, 0.0), 100.0) / 100.0)
    miss = 1.0
    for weights in by_category.values():
        for rank, weight in enumerate(sorted(weights, reverse=True)):
            miss *= 1.0 - weight * 0.5**rank
    return round(100.0 * (1.0 - miss))


class _Lazy:
    """Fetch a file's source at most once, and only if a hunk asks for it."""

    __slots__ = ("_source", "_path", "_lines")

    def __init__(self, source: SourceLookup | None, path: str):
        self._source = source  # None once it has been asked
        self._path = path
        self._lines: list[str] | None = None

    def get(self) -> list[str] | None:
        if self._source is not None:
            self._lines = self._source(self._path)
            self._source = None
        return self._lines
