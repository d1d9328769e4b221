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

This module is the algorithm; the report it builds is `report`'s (worded by `reasons`, written as
JSON by `serialise`), and which function a line sits in is `places`'.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from bot.core.config import CONFIG_PATH, patterns
from bot.core.config.rules import Rule
from bot.core.risk import changes, manifests, map_rules, places, profiles, reasons
from bot.core.risk.diff import FileChange, Hunk, ParsedDiff
from bot.core.risk.places import Segment, enclosing_function
from bot.core.risk.reasons import describe
from bot.core.risk.report import IMPROVES_WHEN_REMOVED, FileRisk, RiskReport, Signal
from bot.core.risk.ruleset import RuleSet

if TYPE_CHECKING:  # a map's machinery loads only where a map is given (`map_rules`)
    from bot.core.risk.stepmap_scoring import MapEvidence, Verdict

# The report's types and words are also named here, where their callers have always found them.
__all__ = [
    "HARMLESS_SHARE",
    "IMPROVES_WHEN_REMOVED",
    "MAX_FILES",
    "NETTED",
    "FileRisk",
    "RiskReport",
    "Signal",
    "SourceLookup",
    "describe",
    "enclosing_function",
    "score",
    "score_file",
]

SourceLookup = Callable[[str], list[str] | None]
# What a match over a file's joined hunks carries besides where it is and what it matched: the
# name a ``def`` defines, the index of a token rule.
_Label = TypeVar("_Label")
# Where a signal fired, as far as its category is concerned (see `_place`).
_Place = tuple[str | int | None, ...]
# The set-up rule (if any) that lowers the signals of a segment of a hunk.
_SetupOf = Callable[[int, Segment], Rule | None]

_SIZE_CAP = 10.0
# The share of its weight a signal keeps when it sits in a hunk that changes no behaviour.
HARMLESS_SHARE = 0.25
# Files of one diff that are scored; beyond, a warning says how many were left out.
MAX_FILES = 10_000
# Token rules of a category whose removed and added occurrences cancel out (a pin rewritten with
# another version: the `dependency` rule says what moved), what is left counting as risk.
NETTED = frozenset({"dependency"})


def score(
    diff: ParsedDiff, rules: RuleSet, source: SourceLookup | None = None, step_map: MapEvidence | None = None
) -> RiskReport:
    """Score ``diff`` against ``rules``; ``source`` may supply a changed file's new text, and
    ``step_map`` what a step runs (`stepmap_scoring`)."""
    warnings = list(diff.warnings)
    scored = diff.files[:MAX_FILES]
    if len(diff.files) > MAX_FILES:
        warnings.append(reasons.files_left_out(len(diff.files), MAX_FILES))
    long = sum(1 for change in scored if not patterns.matchable(change.path))
    if long:
        warnings.append(reasons.paths_too_long(long, patterns.MAX_PATH_LENGTH))
    moved = changes.mechanical(scored)  # moves and sweeps are judged over the whole diff
    files = [
        score_file(change, rules, source, step_map, moved.get(number)) for number, change in enumerate(scored)
    ]
    signals = _strongest_per_rule(s for f in files for s in f.signals)
    improvements = _strongest_per_rule(s for f in files for s in f.improvements)
    size = _size_signal(files)
    if size is not None:
        signals.append(size)
    total = _combine(signals)
    files.sort(key=lambda f: (-f.score, f.cold is not None, f.path))
    notes = []
    if any(f.path == CONFIG_PATH or f.old_path == CONFIG_PATH for f in files):
        notes.append(reasons.edits_config())
    return RiskReport(
        score=total,
        level=rules.thresholds.level(total),
        profile=rules.profile,
        files=files,
        signals=signals,
        warnings=warnings,
        notes=notes,
        improvement=_combine(improvements),
        improvements=improvements,
    )


def score_file(
    change: FileChange,
    rules: RuleSet,
    source: SourceLookup | None = None,
    step_map: MapEvidence | None = None,
    mechanical: Mapping[int, changes.Harmless] | None = None,
) -> FileRisk:
    cold = rules.for_path(change.path)[0]
    signals: list[Signal] = []
    improvements: list[Signal] = []
    code_lines = 0
    if cold is None:
        signals, code_lines = _file_signals(change, rules, source, step_map, mechanical)
        improvements = [s for s in signals if s.improves]
        signals = [s for s in signals if not s.improves]
    signals = _strongest_per_rule(_one_per_place(signals))
    return FileRisk(
        change.path,
        change.old_path,
        change.status,
        change.is_binary,
        change.added,
        change.removed,
        _combine(signals),
        cold.id if cold else None,
        signals,
        damaged=change.damaged,
        code_lines=code_lines,
        improvements=_strongest_per_rule(_one_per_place(improvements)),
    )


@dataclass(frozen=True, slots=True)
class _Edit:
    """A segment of a hunk whose code changed, from line ``at``; ``imports``: at module level,
    and its changed code is only imports."""

    hunk: int
    segment: Segment
    at: int
    imports: bool


@dataclass(frozen=True, slots=True)
class _Found:
    """A function or token signal, with the hunk it fired in and, for a token, whether it sits
    in a set-up function (and which rule says so)."""

    signal: Signal
    hunk: int
    setup: Rule | None = None


def _file_signals(
    change: FileChange,
    rules: RuleSet,
    source: SourceLookup | None,
    step_map: MapEvidence | None = None,
    mechanical: Mapping[int, changes.Harmless] | None = None,
) -> tuple[list[Signal], int]:
    """The signals of a warm file (possible improvements among them), and its changed lines of
    code outside cosmetic hunks."""
    _, path_rules, allowed = rules.for_path(change.path)
    lines = functools.cache(functools.partial(_read, source, change.path))
    harmless = changes.HarmlessHunks(change, mechanical)
    markers = changes.comment_markers(change.path)
    texts = [hunk.joined() for hunk in change.hunks]
    starts = [0, *itertools.accumulate(map(len, texts))]
    whole = "".join(texts)
    defs = _by_hunk(starts, places.definitions(whole))
    tokens = _by_hunk(starts, _tokens(rules, whole)) if any(allowed) else {}
    found: list[_Found] = []
    edited: list[_Edit] = []
    first: tuple[str | None, int | None, str] | None = None
    first_imports = False
    code_lines = 0
    verdicts: dict[tuple[int, Segment], Verdict] = {}
    setup_of = _setup_lookup(rules, verdicts, bool(path_rules))
    for number, hunk in enumerate(change.hunks):
        reason = harmless(number)
        if reason is not None and reason.kind == "cosmetic":
            continue  # the same code: nothing in it can be a reason
        code_lines += len(hunk.code_changes(markers)[0])
        segments = places.segments(hunk, defs.get(number, ()), lines)
        edits = _edits(number, hunk, segments, markers)
        steps = [edit for edit in edits if not edit.imports]
        if (first is None or first_imports) and edits:
            edit = (steps or edits)[0]
            first = (edit.segment.name, hunk.line_number(edit.at), _side(hunk, edit.at))
            first_imports = not steps
        hot: set[Segment] = set()
        for edit in edits:
            fired = _function_signals(rules, change.path, hunk, edit)
            verdict = _verdict(step_map, change.path, hunk, edit)
            if verdict is not None:
                verdicts[(number, edit.segment)] = verdict
                if verdict.per_step:
                    fired.append(
                        verdict.signal(
                            change.path, edit.segment.name, hunk.line_number(edit.at), _side(hunk, edit.at)
                        )
                    )
            if fired:
                hot.add(edit.segment)  # a function rule or the map names it: `scope: hot` tokens fire in it
            lowered = setup_of(number, edit.segment) if verdict is not None else None
            found += [_Found(s, number, lowered) for s in fired]
        edited += edits
        if number in tokens:
            found += _token_signals(
                rules,
                change.path,
                hunk,
                number,
                segments,
                tokens[number],
                bool(path_rules),
                hot,
                allowed,
                markers,
                setup_of,
            )
    moved = _dependency_signals(change, rules)
    found = _net_of_removals(found, netted=NETTED if moved else frozenset())
    function, line, side = first or (None, None, "new")
    paths = (
        [
            Signal(r.id, r.kind, r.category, r.weight, r.description, change.path, function, line, side)
            for r in path_rules
        ]
        if first is not None or not change.hunks
        else []
    )
    signals = _tempered(rules, found, paths, edited, harmless, setup_of) if found or paths else []
    return signals + moved, code_lines


def _verdict(step_map: MapEvidence | None, path: str, hunk: Hunk, edit: _Edit) -> Verdict | None:
    if step_map is None:
        return None
    seg = edit.segment
    changed = [hunk.texts[i] for i in range(seg.start, seg.end) if hunk.types[i] in "+-"]
    return step_map.judge(path, seg.name, changed)


def _setup_lookup(rules: RuleSet, verdicts: dict[tuple[int, Segment], Verdict], hot_file: bool) -> _SetupOf:
    """The set-up rule of a segment: the map's where it judged it (`Verdict.setup`; code that
    never runs per step only in a hot file), else the rules' by its name."""
    weight = rules.setups[0][0].weight if rules.setups else None

    def setup_of(hunk: int, segment: Segment) -> Rule | None:
        verdict = verdicts.get((hunk, segment))
        named = rules.setup_rule(segment.name) if segment.name else None
        if verdict is None or not (verdict.per_step or hot_file):
            return named
        return verdict.setup(weight, named)

    return setup_of


def _read(source: SourceLookup | None, path: str) -> list[str] | None:
    return source(path) if source is not None else None


def _edits(number: int, hunk: Hunk, segments: list[Segment], markers: tuple[str, ...]) -> list[_Edit]:
    """The segments of hunk ``number`` whose code changed, in order."""
    edits = []
    for seg in segments:
        at = _first_code_change(hunk, seg.start, seg.end, markers)
        if at is not None:
            imports = seg.name is None and changes.import_time_only(hunk, seg.start, seg.end, markers)
            edits.append(_Edit(number, seg, at, imports))
    return edits


def _first_code_change(hunk: Hunk, start: int, end: int, markers: tuple[str, ...]) -> int | None:
    """The first added or removed line of ``start``..``end`` that holds code (not blank, not only
    a comment), or None."""
    indices = hunk.code_changes(markers)[0]
    at = bisect.bisect_left(indices, start)
    return indices[at] if at < len(indices) and indices[at] < end else None


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


def _tempered(
    rules: RuleSet,
    found: list[_Found],
    paths: list[Signal],
    edited: list[_Edit],
    harmless: changes.HarmlessHunks,
    setup_of: _SetupOf,
) -> list[Signal]:
    """The signals of one file with their weights lowered where the change cannot matter much:
    in hunks that only rename, or only in set-up code (cosmetic hunks gave none)."""
    signals = []
    for item in found:
        reason = harmless(item.hunk)
        if reason is not None:
            signals.append(_lowered(item.signal, HARMLESS_SHARE, reason.describe()))
        elif item.setup is not None:
            note = (
                item.setup.description
                if item.setup.id == map_rules.OFF_STEP
                else reasons.in_setup_code(item.signal.function or "")
            )
            signals.append(_lowered(item.signal, item.setup.weight / 100, note))
        else:
            signals.append(item.signal)
    if paths:
        share, why = _file_share(rules, harmless, edited, setup_of)
        signals += [_lowered(s, share, why) for s in paths] if why else paths
    return signals


def _file_share(
    rules: RuleSet, harmless: changes.HarmlessHunks, edited: list[_Edit], setup_of: _SetupOf
) -> tuple[float, str | None]:
    """The share of their weight a file's path rules keep, and why (None: all of it).

    Hunks are judged in order and only until one changes code outside set-up functions: then
    the file's rules keep all their weight, and the rest need not be looked at.
    """
    setups: list[tuple[str | None, Rule]] = []
    by_hunk: dict[int, list[_Edit]] = {}
    for edit in edited:
        by_hunk.setdefault(edit.hunk, []).append(edit)
    renamed: list[changes.Harmless] = []
    for number in range(harmless.hunks):
        reason = harmless(number)
        if reason is not None:
            if reason.kind != "cosmetic":
                renamed.append(reason)
            continue
        for edit in by_hunk.get(number, ()):
            name = edit.segment.name
            if edit.imports and rules.setups:  # imports run once, when the module loads
                setups.append((reasons.IMPORTS, rules.setups[0][0]))
                continue
            rule = setup_of(number, edit.segment)
            if rule is None:
                return 1.0, None
            setups.append((name, rule))
    if setups:
        return (
            min(rule.weight for _, rule in setups) / 100,
            map_rules.only_off_step(setups) or reasons.only_setup_code([name or "" for name, _ in setups]),
        )
    if renamed:  # renames, moves or sweeps, maybe cosmetic hunks, and no other change of code
        return HARMLESS_SHARE, changes.describe_all(renamed)
    return 1.0, None


def _lowered(signal: Signal, share: float, why: str) -> Signal:
    if share >= 1.0:
        return signal
    return dataclasses.replace(
        signal, weight=round(signal.weight * share, 1), note=why, full_weight=signal.weight
    )


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
            signals.append(
                Signal(
                    rule.id,
                    rule.kind,
                    rule.category,
                    rule.weight,
                    rule.description,
                    change.path,
                    None,
                    hits[0].line,
                    "new",
                    shown,
                    len(hits),
                )
            )
    return signals


def _by_hunk(
    starts: list[int], found: Iterable[tuple[int, str, _Label]]
) -> dict[int, list[tuple[int, str, _Label]]]:
    """Matches over a file's joined hunks, handed to their hunks with hunk-relative offsets."""
    by_hunk: dict[int, list[tuple[int, str, _Label]]] = {}
    for offset, text, label in found:
        hunk = bisect.bisect_right(starts, offset) - 1
        by_hunk.setdefault(hunk, []).append((offset - starts[hunk], text, label))
    return by_hunk


def _tokens(rules: RuleSet, text: str) -> Iterator[tuple[int, str, int]]:
    """(offset, matched text, token rule index) of each token match, from one RE2 scan.

    ASCII text (most code) goes in as bytes: offsets are the same, and RE2 has nothing to
    re-encode or map back.
    """
    if rules.token_regex is None:
        return
    matches: Iterator[patterns.Match] = (
        rules.token_regex.finditer(text.encode("ascii"))
        if text.isascii()
        else rules.token_regex.finditer(text)
    )
    for match in matches:
        start, end = match.span()
        yield start, text[start:end], rules.token_rule(match)


def _function_signals(rules: RuleSet, path: str, hunk: Hunk, edit: _Edit) -> list[Signal]:
    """The function rules that name the function of ``edit``, each as a signal at its first
    changed line of code."""
    name = edit.segment.name
    if not name:
        return []
    line, side = hunk.line_number(edit.at), _side(hunk, edit.at)
    return [
        Signal(r.id, r.kind, r.category, r.weight, r.description, path, name, line, side)
        for r in rules.function_rules(name)
    ]


def _token_signals(
    rules: RuleSet,
    path: str,
    hunk: Hunk,
    hunk_number: int,
    segments: list[Segment],
    matches: list[tuple[int, str, int]],
    hot_file: bool,
    hot: set[Segment],
    allowed: list[bool],
    markers: tuple[str, ...],
    setup_of: _SetupOf,
) -> list[_Found]:
    """The token rules that fire on the changed lines of a hunk; a ``scope: hot`` one only in a
    hot file or in a ``hot`` segment (one a function rule names)."""
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
        if not allowed[number] or (rule.scope == "hot" and not (hot_file or seg in hot)):
            continue
        signal = Signal(
            rule.id,
            rule.kind,
            rule.category,
            rule.weight,
            rule.description,
            path,
            seg.name,
            hunk.line_number(index),
            _side(hunk, index),
            text.strip()[:80],
        )
        # Set-up code that selects a kernel or backend decides every later step: full weight.
        setup = rule.category not in profiles.SELECTS_CODE_PATH
        found.append(_Found(signal, hunk_number, setup_of(hunk_number, seg) if setup else None))
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
    if not warm:
        return None
    lines = sum(f.code_lines for f in warm)
    weight = round(min(_SIZE_CAP, 2.5 * math.log10(1 + lines) + 0.5 * (len(warm) - 1)), 1)
    largest = max(warm, key=lambda f: f.code_lines)
    return Signal("size", "size", "size", weight, reasons.size(lines, len(warm)), largest.path, None, None)


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
        by_category.setdefault((s.category, s.kind), []).append(min(max(s.weight, 0.0), 100.0) / 100.0)
    miss = 1.0
    for weights in by_category.values():
        for rank, weight in enumerate(sorted(weights, reverse=True)):
            miss *= 1.0 - weight * 0.5**rank
    return round(100.0 * (1.0 - miss))
