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

Traces are outside input: anything that is not such a trace is one `TraceError` line.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from bot.core.judge.profile import SYNC_CALLS, Family, Profile, aggregate, classify

DEVICE_CATEGORIES = frozenset(("kernel", "gpu_memset", "gpu_memcpy"))
HOST_CALL_CATEGORIES = frozenset(("cuda_runtime", "cuda_driver"))
MAX_EVENTS = 5_000_000
_STEP = re.compile(r"^ProfilerStep#\d+$")


class TraceError(ValueError):
    """A trace that cannot be read as a profile; one line saying why."""


@dataclass(frozen=True)
class _Event:
    name: str
    category: str
    start: float
    duration: float
    pid: str
    tid: str
    correlation: int | None

    @property
    def end(self) -> float:
        return self.start + self.duration


def loads(text: str | bytes, source: str, what: str = "step") -> Profile:
    """`profile_of` a trace's JSON text."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise TraceError(f"{source}: not a JSON trace") from None
    return profile_of(data, source, what)


def profile_of(data: Any, source: str, what: str = "step") -> Profile:
    """The profile of a parsed trace; ``what`` names the step in reports."""
    events = _events(data, source)
    steps = sorted((e for e in events if e.category in ("user_annotation", "") and _STEP.match(e.name)),
                   key=lambda e: e.start)
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
    return _Event(name, category if isinstance(category, str) else "", start, duration,
                  str(item.get("pid")), str(item.get("tid")),
                  correlation if isinstance(correlation, int) and not isinstance(correlation, bool) else None)


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


def _device_profile(events: Sequence[_Event], device: Sequence[_Event], steps: Sequence[_Event],
                    source: str, what: str) -> Profile:
    launches = {e.correlation: e for e in events
                if e.category in HOST_CALL_CATEGORIES and e.correlation is not None}
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
    syncs = [e for e in events if e.category in HOST_CALL_CATEGORIES and e.name in SYNC_CALLS
             and (not steps or windows.index(e.start) is not None)]
    rows: list[tuple[str, Family, float]] = [(a.name, classify(a.name, a.category), a.duration)
                                             for group in per_step for a in group]
    rows += [(s.name, "sync", s.duration) for s in syncs]
    count = len(per_step)
    busy = [_union(group) for group in per_step]
    spans = [max(a.end for a in group) - min(a.start for a in group) if group else 0.0 for group in per_step]
    step_us = sum(s.duration for s in steps) / len(steps) if steps else spans[0]
    return Profile(source=source[:200], device="cuda", what=what[:200], steps=count, step_us=step_us,
                   idle_us=sum(span - b for span, b in zip(spans, busy, strict=True)) / count,
                   kernels=aggregate(rows, count))


def _cpu_profile(events: Sequence[_Event], steps: Sequence[_Event], source: str, what: str) -> Profile:
    ops = [e for e in events if e.category == "cpu_op"]
    if not ops:
        raise TraceError(f"{source}: no kernels and no operators in the trace")
    if not steps:
        outermost = _outermost(ops)
        first, last = min(e.start for e in outermost), max(e.end for e in outermost)
        return Profile(source=source[:200], device="cpu", what=what[:200], steps=1, step_us=last - first,
                       idle_us=max(last - first - _union(outermost), 0.0),
                       kernels=aggregate(((e.name, classify(e.name), e.duration) for e in outermost), 1))
    windows = _Windows(steps)
    inside: list[list[_Event]] = [[] for _ in steps]
    for op in ops:
        index = windows.index(op.start)
        if index is not None and (op.pid, op.tid) == (steps[index].pid, steps[index].tid) \
                and op.end <= steps[index].end:
            inside[index].append(op)
    rows: list[tuple[str, Family, float]] = []
    idle = 0.0
    for step, group in zip(steps, inside, strict=True):
        top = _outermost(group)
        rows += [(e.name, classify(e.name), e.duration) for e in top]
        idle += max(step.duration - _union(top), 0.0)
    return Profile(source=source[:200], device="cpu", what=what[:200], steps=len(steps),
                   step_us=sum(s.duration for s in steps) / len(steps), idle_us=idle / len(steps),
                   kernels=aggregate(rows, len(steps)))


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
