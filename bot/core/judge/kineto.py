"""Read a Kineto / Chrome trace (what PyTorch's profiler exports, and SGLang's and vLLM's profilers
write) into a `profile.Profile`.

What is read (Chrome trace format, ``{"traceEvents": [...]}``, times in microseconds):

- steps: the profiler's ``ProfilerStep#N`` annotations (``torch.profiler.schedule`` and
  ``prof.step()``); a trace without them is one step, the whole trace;
- on a GPU, the device's activities (categories ``kernel``, ``gpu_memset``, ``gpu_memcpy``), each
  placed in the step whose window holds the host call that launched it (``args.correlation``
  links the two; a CUDA graph's kernels link to its ``cudaGraphLaunch``), and the host's
  synchronisations (`profile.SYNC_CALLS` among ``cuda_runtime`` / ``cuda_driver`` calls);
  ``idle_us`` is each step's span on the device less the time some activity ran;
- on CPU (no device activity in the trace), the operators called directly inside each step
  (``cpu_op`` events not nested in another operator), with ``idle_us`` the step's time outside
  them (Python, waiting on a collective).

Where the profiled pass recorded Python calls (``with_stack``) and named the frames of the
repository under test in them (``python_function`` events whose ``args`` hold ``perfbot.caller``:
the repository's frame that made the call, and ``perfbot.function``: the repository's function
called; `bot.runner.suites.verify_step_workload.annotate_trace` writes them), `read` also says
which lines launched each kernel (the innermost call, on the launching thread, made from the
repository) and builds the step's `bot.core.stepmap` entries: each function of the repository with
its calls per step and share of the steps' host time, each kernel family with its launching lines.
A trace without them is read as before, without either.

Traces are outside input: anything that is not such a trace is one `TraceError` line; an
annotation that does not name a frame of the repository is ignored.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from bot.core.judge.profile import (
    MAX_NAME,
    MAX_SITES,
    SYNC_CALLS,
    Family,
    LaunchSite,
    Profile,
    aggregate,
    classify,
)
from bot.core.stepmap import (
    MAX_FUNCTIONS,
    MAX_LAUNCH_SITES,
    FunctionEntry,
    KernelEntry,
    StepMap,
    StepMapError,
)
from bot.core.stepmap import LaunchSite as MapSite
from bot.core.stepmap import parse as parse_map

DEVICE_CATEGORIES = frozenset(("kernel", "gpu_memset", "gpu_memcpy"))
HOST_CALL_CATEGORIES = frozenset(("cuda_runtime", "cuda_driver"))
MAX_EVENTS = 5_000_000
_STEP = re.compile(r"^ProfilerStep#\d+$")


class TraceError(ValueError):
    """A trace that cannot be read as a profile; one line saying why."""


@dataclass(frozen=True)
class Frame:
    """A frame of the repository under test, as an annotation of the trace names it."""

    path: str
    line: int
    function: str


@dataclass(frozen=True)
class _Event:
    name: str
    category: str
    start: float
    duration: float
    pid: str
    tid: str
    correlation: int | None
    caller: Frame | None = None  # python_function: the repository's frame that made the call
    defines: Frame | None = None  # python_function: the repository's function called

    @property
    def end(self) -> float:
        return self.start + self.duration

    @property
    def thread(self) -> tuple[str, str]:
        return self.pid, self.tid


@dataclass(frozen=True)
class Traced:
    """What a trace says: the profile and, where the trace names the repository's frames, the
    entries of its per-step map (`step_map` makes the map)."""

    profile: Profile
    functions: tuple[FunctionEntry, ...] = ()
    kernels: tuple[KernelEntry, ...] = ()
    annotated: bool = False

    def step_map(self, commit: str, suite: str) -> StepMap | None:
        """The per-step map of the profiled commit, or None where the trace names no frame."""
        if not self.annotated:
            return None
        try:
            return parse_map(
                StepMap(
                    commit=commit,
                    suite=suite,
                    step=self.profile.what or "step",
                    steps=self.profile.steps,
                    source="torch.profiler",
                    functions=self.functions,
                    kernels=self.kernels,
                ).to_dict()
            )
        except StepMapError:
            return None  # a commit or suite name the map cannot hold: the profile stands without it


def loads(text: str | bytes, source: str, what: str = "step") -> Profile:
    """`profile_of` a trace's JSON text."""
    return read(text, source, what).profile


def read(text: str | bytes, source: str, what: str = "step") -> Traced:
    """`traced` of a trace's JSON text."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise TraceError(f"{source}: not a JSON trace") from None
    return traced(data, source, what)


def profile_of(data: Any, source: str, what: str = "step") -> Profile:
    """The profile of a parsed trace; ``what`` names the step in reports."""
    return traced(data, source, what).profile


def traced(data: Any, source: str, what: str = "step") -> Traced:
    """The profile of a parsed trace and, where it names the repository's frames, the map's entries."""
    events = _events(data, source)
    steps = sorted(
        (e for e in events if e.category in ("user_annotation", "") and _STEP.match(e.name)),
        key=lambda e: e.start,
    )
    device = [e for e in events if e.category in DEVICE_CATEGORIES]
    try:
        if device:
            return _device_profile(events, device, steps, source, what)
        return _cpu_profile(events, steps, source, what)
    except ValidationError as error:
        raise TraceError(f"{source}: {error.errors()[0]['msg']}") from None


def _events(data: Any, source: str) -> list[_Event]:
    raw = data.get("traceEvents") if isinstance(data, Mapping) else data
    if not isinstance(raw, list):
        raise TraceError(f"{source}: not a Chrome trace (no 'traceEvents' list)")
    if len(raw) > MAX_EVENTS:
        raise TraceError(f"{source}: more than {MAX_EVENTS} events")
    return [event for item in raw if (event := _event(item)) is not None]


def _event(item: Any) -> _Event | None:
    """A complete event (``"ph": "X"``) with a name, a start and a duration; anything else: None."""
    if not isinstance(item, Mapping) or item.get("ph") != "X":
        return None
    name, start, duration = item.get("name"), _number(item.get("ts")), _number(item.get("dur"))
    if not isinstance(name, str) or start is None or duration is None or duration < 0:
        return None
    args = item.get("args")
    correlation = args.get("correlation") if isinstance(args, Mapping) else None
    category = item.get("cat")
    caller = defines = None
    if category == "python_function" and isinstance(args, Mapping):
        caller, defines = _frame(args.get("perfbot.caller")), _frame(args.get("perfbot.function"))
    return _Event(
        name,
        category if isinstance(category, str) else "",
        start,
        duration,
        str(item.get("pid")),
        str(item.get("tid")),
        correlation if isinstance(correlation, int) and not isinstance(correlation, bool) else None,
        caller,
        defines,
    )


def _frame(value: Any) -> Frame | None:
    """The frame an annotation names, if it is a frame of the repository (else it is ignored)."""
    if not isinstance(value, Mapping):
        return None
    try:
        site = LaunchSite.model_validate(
            {
                "path": value.get("path"),
                "line": value.get("line"),
                "function": value.get("function"),
                "calls": 0.0,
            }
        )
    except ValidationError:
        return None
    return Frame(site.path, site.line, site.function)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if number == number and abs(number) < 1e300 else None


class _Windows:
    """The steps' windows on the host; `index` says which one holds an instant."""

    def __init__(self, steps: Sequence[_Event]):
        self.starts = [s.start for s in steps]
        self.steps = steps

    def index(self, instant: float) -> int | None:
        position = bisect.bisect_right(self.starts, instant) - 1
        if position < 0 or instant > self.steps[position].end:
            return None
        return position


def _device_profile(
    events: Sequence[_Event], device: Sequence[_Event], steps: Sequence[_Event], source: str, what: str
) -> Traced:
    launches = {
        e.correlation: e for e in events if e.category in HOST_CALL_CATEGORIES and e.correlation is not None
    }
    windows = _Windows(steps)
    per_step: list[list[_Event]] = [[] for _ in range(max(len(steps), 1))]
    for activity in device:
        if not steps:
            per_step[0].append(activity)
            continue
        launch = launches.get(activity.correlation) if activity.correlation is not None else None
        step = windows.index(launch.start) if launch is not None else None
        if step is not None:
            per_step[step].append(activity)
    syncs = [
        e
        for e in events
        if e.category in HOST_CALL_CATEGORIES
        and e.name in SYNC_CALLS
        and (not steps or windows.index(e.start) is not None)
    ]
    rows: list[tuple[str, Family, float]] = [
        (a.name, classify(a.name, a.category), a.duration) for group in per_step for a in group
    ]
    rows += [(s.name, "sync", s.duration) for s in syncs]
    # Each row's host event: a kernel's launch (where the trace links it), a synchronisation itself.
    hosts = [
        launches.get(a.correlation) if a.correlation is not None else None
        for group in per_step
        for a in group
    ] + list(syncs)
    count = len(per_step)
    busy = [_union(group) for group in per_step]
    spans = [max(a.end for a in group) - min(a.start for a in group) if group else 0.0 for group in per_step]
    step_us = sum(s.duration for s in steps) / len(steps) if steps else spans[0]
    profile = Profile(
        source=source[:200],
        device="cuda",
        what=what[:200],
        steps=count,
        step_us=step_us,
        idle_us=sum(span - b for span, b in zip(spans, busy, strict=True)) / count,
        kernels=aggregate(rows, count),
    )
    return _attributed(profile, events, steps, rows, hosts)


def _cpu_profile(events: Sequence[_Event], steps: Sequence[_Event], source: str, what: str) -> Traced:
    ops = [e for e in events if e.category == "cpu_op"]
    if not ops:
        raise TraceError(f"{source}: no kernels and no operators in the trace")
    if not steps:
        outermost = _outermost(ops)
        first, last = min(e.start for e in outermost), max(e.end for e in outermost)
        whole: list[tuple[str, Family, float]] = [(e.name, classify(e.name), e.duration) for e in outermost]
        profile = Profile(
            source=source[:200],
            device="cpu",
            what=what[:200],
            steps=1,
            step_us=last - first,
            idle_us=max(last - first - _union(outermost), 0.0),
            kernels=aggregate(whole, 1),
        )
        return _attributed(profile, events, steps, whole, outermost)
    windows = _Windows(steps)
    inside: list[list[_Event]] = [[] for _ in steps]
    for op in ops:
        index = windows.index(op.start)
        if (
            index is not None
            and (op.pid, op.tid) == (steps[index].pid, steps[index].tid)
            and op.end <= steps[index].end
        ):
            inside[index].append(op)
    rows: list[tuple[str, Family, float]] = []
    hosts: list[_Event | None] = []
    idle = 0.0
    for step, group in zip(steps, inside, strict=True):
        top = _outermost(group)
        rows += [(e.name, classify(e.name), e.duration) for e in top]
        hosts += top
        idle += max(step.duration - _union(top), 0.0)
    profile = Profile(
        source=source[:200],
        device="cpu",
        what=what[:200],
        steps=len(steps),
        step_us=sum(s.duration for s in steps) / len(steps),
        idle_us=idle / len(steps),
        kernels=aggregate(rows, len(steps)),
    )
    return _attributed(profile, events, steps, rows, hosts)


def _outermost(ops: Iterable[_Event]) -> list[_Event]:
    """The operators no other operator of the same thread encloses."""
    kept: list[_Event] = []
    ends: dict[tuple[str, str], float] = {}
    for op in sorted(ops, key=lambda e: (e.start, -e.duration)):
        thread = (op.pid, op.tid)
        if op.start < ends.get(thread, float("-inf")):
            continue  # inside the last outermost operator of its thread
        kept.append(op)
        ends[thread] = op.end
    return kept


def _union(events: Iterable[_Event]) -> float:
    """How long at least one of ``events`` was running."""
    total, reach = 0.0, float("-inf")
    for event in sorted(events, key=lambda e: e.start):
        if event.end <= reach:
            continue
        total += event.end - max(event.start, reach)
        reach = event.end
    return total


# ---------------------------------------------------------------- the repository's frames


def _attributed(
    profile: Profile,
    events: Sequence[_Event],
    steps: Sequence[_Event],
    rows: Sequence[tuple[str, Family, float]],
    hosts: Sequence[_Event | None],
) -> Traced:
    """``profile`` with each kernel's launching lines, and the map's entries, where the trace names
    the repository's frames (``rows[i]`` was launched by the host event ``hosts[i]``)."""
    python = [e for e in events if e.category == "python_function" and (e.caller or e.defines)]
    if not python:
        return Traced(profile)
    sites = _innermost_callers([e for e in python if e.caller is not None], hosts)
    per_row: dict[tuple[str, Family], Counter[Frame]] = {}
    per_family: dict[Family, Counter[Frame]] = {}
    launches: Counter[Family] = Counter()
    for (name, family, _), site in zip(rows, sites, strict=True):
        launches[family] += 1
        if site is not None:
            per_row.setdefault((name[:MAX_NAME] or "(unnamed)", family), Counter())[site] += 1
            per_family.setdefault(family, Counter())[site] += 1
    count = profile.steps
    kernels = [
        k.model_copy(update={"sites": _sites(per_row[(k.name, k.family)], count)})
        if (k.name, k.family) in per_row
        else k
        for k in profile.kernels
    ]
    families = tuple(
        KernelEntry(
            family=family,
            launches_per_step=launches[family] / count,
            launched_by=tuple(
                MapSite(f.path, f.function, f.line, n / count)
                for f, n in _most(per_family.get(family, Counter()), MAX_LAUNCH_SITES)
            ),
        )
        for family in sorted(launches)
    )
    host_us = profile.step_us * count
    return Traced(
        profile.model_copy(update={"kernels": kernels}),
        _functions([e for e in python if e.defines is not None], steps, count, host_us),
        families,
        annotated=True,
    )


def _sites(counts: Counter[Frame], steps: int) -> list[LaunchSite]:
    return [
        LaunchSite(path=f.path, line=f.line, function=f.function, calls=n / steps)
        for f, n in _most(counts, MAX_SITES)
    ]


def _most(counts: Counter[Frame], limit: int) -> list[tuple[Frame, int]]:
    """The ``limit`` most frequent frames, ties in file and line order."""

    def order(item: tuple[Frame, int]) -> tuple[int, str, int, str]:
        return -item[1], item[0].path, item[0].line, item[0].function

    return sorted(counts.items(), key=order)[:limit]


def _innermost_callers(calls: Sequence[_Event], hosts: Sequence[_Event | None]) -> list[Frame | None]:
    """For each host event, the calling frame of the innermost call made from the repository that
    encloses it on its thread: the repository's line that led to it (None: no such call)."""
    found: list[Frame | None] = [None] * len(hosts)
    by_thread: dict[tuple[str, str], list[_Event]] = {}
    for call in calls:
        by_thread.setdefault(call.thread, []).append(call)
    asked: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for index, host in enumerate(hosts):
        if host is not None and host.thread in by_thread:
            asked.setdefault(host.thread, []).append((host.start, index))
    for thread, queries in asked.items():
        ordered = sorted(by_thread[thread], key=lambda e: (e.start, -e.duration))
        open_calls: list[_Event] = []
        position = 0
        for instant, index in sorted(queries):
            while position < len(ordered) and ordered[position].start <= instant:
                while open_calls and open_calls[-1].end < ordered[position].start:
                    open_calls.pop()
                open_calls.append(ordered[position])
                position += 1
            while open_calls and open_calls[-1].end < instant:
                open_calls.pop()
            if open_calls:
                found[index] = open_calls[-1].caller
    return found


def _functions(
    calls: Sequence[_Event], steps: Sequence[_Event], count: int, host_us: float
) -> tuple[FunctionEntry, ...]:
    """The repository's functions called within the steps: calls per step and their inclusive share
    of the steps' host time (a recursive call's time is counted once, in its outermost call)."""
    windows = _Windows(steps) if steps else None
    kept = [c for c in calls if windows is None or windows.index(c.start) is not None]
    times: dict[Frame, float] = {}
    numbers: Counter[Frame] = Counter()
    by_thread: dict[tuple[str, str], list[_Event]] = {}
    for call in kept:
        by_thread.setdefault(call.thread, []).append(call)
    for thread_calls in by_thread.values():
        open_calls: list[_Event] = []
        for call in sorted(thread_calls, key=lambda e: (e.start, -e.duration)):
            while open_calls and open_calls[-1].end < call.start:
                open_calls.pop()
            frame = call.defines
            if frame is None:
                continue  # the caller keeps only calls of the repository's functions
            numbers[frame] += 1
            if all(c.defines != frame for c in open_calls):
                times[frame] = times.get(frame, 0.0) + call.duration
            open_calls.append(call)
    entries: dict[tuple[str, str], FunctionEntry] = {}
    for frame, n in sorted(
        numbers.items(), key=lambda item: (-times.get(item[0], 0.0), item[0].path, item[0].line)
    ):
        key = (frame.path, frame.function)
        if key in entries or len(entries) >= MAX_FUNCTIONS:
            continue  # one entry per function: two definitions of one name, the one that took longer
        share = min(times.get(frame, 0.0) / host_us, 1.0) if host_us > 0 else 0.0
        entries[key] = FunctionEntry(
            path=frame.path,
            function=frame.function,
            line=frame.line,
            calls_per_step=n / count,
            host_share=share,
        )
    return tuple(entries.values())
