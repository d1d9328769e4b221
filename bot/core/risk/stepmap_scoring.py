"""What the per-step map says of a changed function: whether it runs on every step, and how much of
the step it is; the weight a signal of that gets, and a reason that names the measurement.

Four rules, judged at the map's commit (the base a pull request is compared with, or the default
branch's latest):

- a changed function on the map is per-step hot whatever its file is called, weighted by its share
  of the step's host time (`share_weight`);
- one not on the map but called by, or decorating, one that is (`callgraph`, from the base's
  source) reaches it: per-step too, at `REACHED_SHARE` of the weight of the mapped function; a
  decorator of it, and the wrapper a decorator (factory) returns in its place, which runs on every
  call, count at the mapped function's whole weight;
- a module-level constant or class attribute default read by a function that runs per step counts
  as that function, at its weight (the whole of a mapped reader's), also when it reaches the reader
  through module-level constants computed from it at import (a config default copied into a
  constant of another module, an environment default, a flag an ``if`` at import tests);
- a changed function the base's call graph knows that neither is on the map nor reaches it never
  runs per step: in a hot file (one with path rules) its signals keep the set-up share, as set-up
  code does.

A function, constant or default the base does not have (new in the change), or one in a file the
graph did not read, gets no verdict: the static rules judge it as they would without a map.

Where the map recorded the lines that ran in its steps and the diff is given, a change to a
function that runs per step (on the map or reached from it) whose changed lines all lay where the
measured steps never went (a lazy-init branch, an error path; `map_lines`) never runs per step
either; one changed line that ran, or that cannot be placed, keeps the function's weight.
"""

from __future__ import annotations

import functools
import math
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from bot.core.config.rules import Rule
from bot.core.risk import callgraph, map_lines
from bot.core.risk.callgraph import Binding, CallGraph, Function
from bot.core.risk.diff import ParsedDiff
from bot.core.risk.map_rules import CATEGORY, OFF_STEP, PER_STEP, REACHES, READ_BY
from bot.core.risk.report import Signal
from bot.core.stepmap import FunctionEntry, StepMap

# A function on the map weighs from FLOOR (a sliver of the step) up to CEILING (FULL_SHARE of the
# step's host time or more), by the square root of its share: a function at 1% of the step is
# already a large part of what a change can slow down.
FLOOR = 35.0
CEILING = 80.0
FULL_SHARE = 0.10
# What a function reached from a mapped one keeps of that one's weight: it runs as often, but it
# is only a part of the time the mapped one is measured by.
REACHED_SHARE = 0.75

# How a function runs in the place of a mapped one (`_how`): it counts at that one's whole weight.
_IN_PLACE = ("decorates", "is what a decorator puts in place of")
_ASSIGNMENT = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?(?://|\*\*|>>|<<|[-+*/%&|^@])?=(?!=)")


@dataclass(frozen=True, slots=True)
class Verdict:
    """The map's say on one changed place: per step (``weight`` for its signal, ``rule`` one of
    `PER_STEP`, `REACHES`, `READ_BY`) or never per step (`OFF_STEP`), and why."""

    rule: str
    weight: float
    reason: str

    @property
    def per_step(self) -> bool:
        return self.rule != OFF_STEP

    def signal(self, path: str, function: str | None, line: int | None, side: str) -> Signal:
        return Signal(self.rule, "function", CATEGORY, self.weight, self.reason, path, function, line, side)

    def setup(self, setup_weight: float | None, named: Rule | None = None) -> Rule | None:
        """The set-up rule the place is lowered by, given the one its name gives (``named``): none
        for a function the step was measured running; ``named`` for one only the call graph
        reaches (a constructor a per-step function calls lazily runs once all the same); for
        code that never runs per step, one of ``setup_weight`` (None: no set-up weight to lower
        it to)."""
        if self.rule == PER_STEP:
            return None
        if self.per_step:
            return named
        if setup_weight is None:
            return None
        return Rule(id=OFF_STEP, kind="setup", category="setup", weight=setup_weight, description=self.reason)


def sources_wanted(step_map: StepMap, changed: Iterable[str], limit: int) -> list[str]:
    """The files whose source the call graph is built from, at most ``limit``: the changed Python
    files (a changed function is found there), then the map's files by their largest share (the
    callers); a function in a file left out gets no verdict."""
    paths = [path for path in changed if path.endswith(".py")]
    paths += [entry.path for entry in sorted(step_map.functions, key=lambda e: -e.host_share)]
    return list(dict.fromkeys(paths))[:limit]


def evidence(
    step_map: StepMap,
    read: Callable[[str], str | None] | None,
    changed: Iterable[str],
    branch: str | None,
    limit: int,
    diff: ParsedDiff | None = None,
) -> MapEvidence:
    """The map with the call graph of the files `sources_wanted` names, as ``read`` gives them at
    the map's commit (None: no source to read, no graph); a file it cannot give is left out.
    ``diff``: the change judged, whose lines the map's recorded lines judge (None: functions only)."""
    if read is None:
        return MapEvidence(step_map, None, branch)
    sources = {}
    for path in sources_wanted(step_map, changed, limit):
        text = read(path)
        if text is not None:
            sources[path] = text
    return MapEvidence(step_map, callgraph.build(sources), branch, sources, diff)


def share_weight(share: float) -> float:
    """A mapped function's weight from its share (0-1) of the step's host time."""
    fraction = min(max(share, 0.0) / FULL_SHARE, 1.0)
    return round(FLOOR + (CEILING - FLOOR) * math.sqrt(fraction), 1)


def assigned_names(lines: Sequence[str]) -> list[str]:
    """The names that changed lines assign (``NAME = ...``, ``name: type = ...``, ``NAME += ...``)."""
    found = (_ASSIGNMENT.match(line) for line in lines)
    return list(dict.fromkeys(match[1] for match in found if match))


@dataclass(frozen=True)
class MapEvidence:
    """A step map, the call graph of its commit's source (None: not read), and where the map was
    measured (a branch name, or None)."""

    step_map: StepMap
    graph: CallGraph | None = None
    branch: str | None = None
    sources: Mapping[str, str] | None = None  # path: text at the map's commit, for `map_lines`
    diff: ParsedDiff | None = None

    def judge(self, path: str, function: str | None, changed: Sequence[str]) -> Verdict | None:
        """The verdict on a change at ``function`` (None: module level) of ``path`` whose changed
        lines are ``changed``; None when the map says nothing of it."""
        if function is not None:
            entry = self._entry(path, function)
            if entry is not None:
                cold = self._cold(path, function, entry)
                return cold or Verdict(PER_STEP, share_weight(entry.host_share), self._measured(entry))
        if self.graph is None:
            return None
        if function is not None:
            known = self.graph.named(path, function)
            for definition in known:
                root = self._reached.get(definition)
                if root is not None:
                    cold = self._cold(path, function, None)
                    if cold is not None:
                        return cold
                    how = _how(self.graph, definition, root)
                    return self._via(root, f"{how} {root.qualname}(), which", REACHES, how in _IN_PLACE)
            if known:
                return self._off_step()
            classes = self.graph.klass(path, function)
            if not classes:
                return None
            defaults = {name for klass in classes for name in klass.attributes}
            names = [name for name in assigned_names(changed) if name in defaults]
            return self._read(path, names, class_attributes=True) if names else None
        names = [name for name in assigned_names(changed) if (path, name) in self.graph.constants]
        return self._read(path, names, class_attributes=False) if names else None

    @cached_property
    def _entries(self) -> dict[tuple[str, str], FunctionEntry]:
        """The map's functions by path and own name, the larger share first where two share one."""
        by_name: dict[tuple[str, str], FunctionEntry] = {}
        for entry in sorted(self.step_map.functions, key=lambda e: -e.host_share):
            by_name.setdefault((entry.path, entry.function.rpartition(".")[2]), entry)
        return by_name

    @cached_property
    def _reached(self) -> dict[Function, Function]:
        """Every function of the graph that runs when a mapped one does, with the mapped one."""
        if self.graph is None:
            return {}
        entries = sorted(self.step_map.functions, key=lambda e: -e.host_share)
        roots = [self.graph.function(e.path, e.function) for e in entries]
        return self.graph.reach(root for root in roots if root is not None)

    @cached_property
    def _changed(self) -> dict[str, list[map_lines.ChangedLine]]:
        """The diff's changed places per (new) path, judged by the map's lines, where the map
        recorded the file's lines and its text at the map's commit was read."""
        if self.diff is None or self.sources is None or self.step_map.lines is None:
            return {}
        found = {}
        for change in self.diff.files:
            base = change.old_path or change.path
            text = self.sources.get(base)
            if text is None or base not in self.step_map.lines or not change.hunks:
                continue
            found[change.path] = map_lines.changed_lines(
                text, change, functools.partial(self.step_map.ran, base)
            )
        return found

    def _cold(self, path: str, function: str, entry: FunctionEntry | None) -> Verdict | None:
        """The verdict that ``function`` changed only where the measured steps never went, or None
        when a changed line of it ran (or none could be judged)."""
        found = [c for c in self._changed.get(path, ()) if c.function == function]
        if not found or any(c.ran for c in found):
            return None
        shown = ", ".join(str(c.line + 1 if c.added else c.line) for c in found[:3])
        runs = f" (it {self._measured(entry)})" if entry is not None else ""
        return Verdict(
            OFF_STEP,
            0.0,
            f"the lines changed in {function}() (line {shown} of the map's commit) did not run in "
            f"the {self.step_map.steps} measured {self.step_map.step}s {self._where()}{runs}",
        )

    def _entry(self, path: str, function: str) -> FunctionEntry | None:
        return self._entries.get((path, function))

    def _read(self, path: str, names: list[str], class_attributes: bool) -> Verdict:
        """The verdict on changed constants (or class attribute defaults) ``names`` of ``path``:
        read by a function that runs per step, directly or through module-level constants
        computed from them at import (`_flows`)."""
        graph = self.graph
        if graph is None:
            raise RuntimeError("constants are judged only with the base's call graph")
        for name in names:
            for target, chain in _flows(graph, path, name, class_attributes):
                for reader, root in self._reached.items():
                    if not _reads(graph, reader, *target):
                        continue
                    origin = _origin(graph, path, name, class_attributes, chain)
                    lead = f"{origin} read by {reader.qualname}(), which"
                    how = _how(graph, reader, root) if reader is not root else ""
                    if how:
                        lead = f"{lead} {how if how in _IN_PLACE else f'is {how}'} {root.qualname}(), which"
                    return self._via(root, lead, rule=READ_BY, whole=reader is root or how in _IN_PLACE)
        return self._off_step(names)

    def _via(self, root: Function, lead: str, rule: str, whole: bool) -> Verdict:
        """A verdict at ``root``'s weight: all of it for what runs in its place (``whole``: its
        decorator and the wrapper that decorator returns), `REACHED_SHARE` of it otherwise."""
        entry = self.step_map.function_at(root.path, root.qualname)
        if entry is None:
            raise RuntimeError(f"{root.qualname} is reached from the map but not on it")
        share = 1.0 if whole else REACHED_SHARE
        return Verdict(
            rule, round(share_weight(entry.host_share) * share, 1), f"{lead} {self._measured(entry)}"
        )

    def _off_step(self, names: Sequence[str] = ()) -> Verdict:
        what = f"`{'`, `'.join(names)}` read by no function that runs" if names else "never runs"
        return Verdict(
            OFF_STEP,
            0.0,
            f"{what} per {self.step_map.step}: not on the map "
            f"{self._where()}, nor reached from a function on it",
        )

    def _measured(self, entry: FunctionEntry) -> str:
        return (
            f"runs {_times(entry.calls_per_step)} per {self.step_map.step}, "
            f"{_percent(entry.host_share)} of its host time, measured {self._where()}"
        )

    def _where(self) -> str:
        commit = self.step_map.commit[:7]
        return f"on {self.branch} at {commit}" if self.branch else f"at {commit}"


def _how(graph: CallGraph, function: Function, root: Function) -> str:
    """How ``function`` runs when ``root`` does: it decorates it, it is the wrapper a decorator of
    ``root`` returns (runs on every call in its place), ``root`` calls it, or something ``root``
    calls does."""
    if function in graph.decorators(root):
        return "decorates"
    if function in graph.wrappers(root):
        return "is what a decorator puts in place of"
    return "called from" if function in graph.callees(root) else "reached from"


def _reads(
    graph: CallGraph, reader: Function | Binding, path: str, name: str, class_attributes: bool
) -> bool:
    """Whether ``reader`` (a function, or a module-level binding's value) reads the constant (or
    class attribute default) ``name`` of ``path``: from its own file, or from anywhere when only
    one file (class) of the graph defines it, by name (``from m import NAME``) or as an attribute
    of that file's module (``m.NAME``); a class default where one class has it, or the reader
    names the class."""
    if class_attributes:
        if name not in reader.attributes:
            return False
        owners = [k for k in graph.classes if name in k.attributes]
        if len(owners) == 1:
            return True
        owner = getattr(reader, "owner", None)
        if reader.path == path and any(k.qualname == owner for k in owners):
            return True
        return isinstance(reader, Binding) and any(k.path == path and k.name in reader.reads for k in owners)
    defined = {where for where, constant in graph.constants if constant == name}
    if name in reader.reads:
        return reader.path == path or defined == {path}
    module = path.rpartition("/")[2].removesuffix(".py")
    return name in reader.attributes and module in reader.reads and defined == {path}


# How many module-level copies `_flows` follows from a changed constant or default.
MAX_COPIES = 4


def _flows(
    graph: CallGraph, path: str, name: str, class_attributes: bool
) -> Iterator[tuple[tuple[str, str, bool], tuple[Binding, ...]]]:
    """The changed constant (or default) itself, then each module-level binding computed from
    it at import, and from those in turn (up to `MAX_COPIES` deep), with the bindings between."""
    start = (path, name, class_attributes)
    queue: deque[tuple[tuple[str, str, bool], tuple[Binding, ...]]] = deque([(start, ())])
    seen = {start}
    while queue:
        target, chain = queue.popleft()
        yield target, chain
        if len(chain) >= MAX_COPIES:
            continue
        for binding in graph.bindings:
            found = (binding.path, binding.name, False)
            if found not in seen and _reads(graph, binding, *target):
                seen.add(found)
                queue.append((found, (*chain, binding)))


def _origin(graph: CallGraph, path: str, name: str, class_attributes: bool, chain: Sequence[Binding]) -> str:
    """How a changed constant or default reaches its reader: "`X` is", or "the default of
    `Config.x`, copied to `_X` in a.py, is"."""
    owners = [k.qualname for k in graph.classes if k.path == path and name in k.attributes]
    head = f"the default of `{owners[0]}.{name}`" if class_attributes and owners and chain else f"`{name}`"
    copies = "".join(f", copied to `{b.name}` in {b.path}" for b in chain)
    return f"{head}{copies}{',' if chain else ''} is"


def _times(calls: float) -> str:
    return "once" if calls == 1 else f"{round(calls, 2):g} times"


def _percent(share: float) -> str:
    return f"{round(share * 100, 2):g}%"
