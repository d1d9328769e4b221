"""EAGLE-3 speculative decoding in words: does speculation still pay, and what changed — the
accept length (draft model, sampling) or the cycle time at the same accept length (kernels,
communication).

`ROLES` maps the metric names the suite kinds report to what they mean, as each kind declares them
(`bot.core.config.suite_kinds`); renderers take their labels from here too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bot.core.config import suite_kinds
from bot.core.config.suite_kinds.base import MetricRole, Part
from bot.core.judge.quantities import number, percent
from bot.core.judge.results import SIDES, Results

Cause = Literal["accept_length", "cycle_time", "both", "none", "unknown"]
Status = Literal["pays", "break-even", "costs"]

# Every suite kind's metrics' words, by metric name: what reports call them and what each is to
# the explanation below (the speculative and plain rates, the accept length, the cycle, its parts).
ROLES: dict[str, MetricRole] = suite_kinds.metric_roles()


def _named(part: Part) -> str:
    """The metric name of a quantity the explanation reads (one name, whichever kind reports it)."""
    return next(name for name, role in ROLES.items() if role.part == part)


SPEC_TOK_S, BASELINE_TOK_S = _named("speculative_rate"), _named("plain_rate")
SPEEDUP, ACCEPT_LENGTH, CYCLE = _named("speedup"), _named("accept_length"), _named("cycle")
# How the engine ran a measurement (a results file's metric ``mode``), in words.
MODES = {
    "full": "with one CUDA graph per pass",
    "piecewise": "with piecewise CUDA graphs",
    "eager": "in eager mode",
}
CYCLE_PARTS = tuple(name for name, role in ROLES.items() if role.part in ("cycle_part", "communication"))
COMMUNICATION = frozenset(name for name, role in ROLES.items() if role.part == "communication")
# A run that measured one of these measured speculation (the plain rate alone did not).
SPECULATION_METRICS = frozenset((SPEC_TOK_S, SPEEDUP, ACCEPT_LENGTH, CYCLE))
# The results file's ``options`` key of the configured floor of the speed-up (a suite's
# ``speculation_floor``), below which the comparison calls it out as it does below 1.
SPECULATION_FLOOR = "speculation_floor"
# The plain decode step's time: what the speed-up is measured against, apart from the cycle.
PLAIN_STEP = "decode_ms"


class Judged(Protocol):
    """What this module reads of a per-metric judgement (`stats.MetricJudgement` fits)."""

    @property
    def base_center(self) -> float | None: ...
    @property
    def head_center(self) -> float | None: ...
    @property
    def change(self) -> float | None: ...
    @property
    def verdict(self) -> str: ...
    @property
    def unit(self) -> str: ...


Interval = tuple[float, float]


@dataclass(frozen=True, slots=True)
class SpeculationJudgement:
    """Speedup of speculation over not speculating, before and after, and the cause of a change."""

    speedup_before: float | None
    speedup_after: float | None
    status_before: Status | None
    status_after: Status | None
    cause: Cause
    sentences: tuple[str, ...] = ()
    floor: float | None = None
    # The call-out of its own: the speed-up fell below 1 (or the floor), stays there, or came back.
    break_even: str | None = None
    # The head's speed-up is below 1 (or the floor) by its whole interval: the call-out warns.
    short: bool = False
    # Each side's interval of the speed-up (`speedup_intervals`), where its rounds gave one.
    interval_before: Interval | None = None
    interval_after: Interval | None = None

    @property
    def stopped_paying(self) -> bool:
        return _stopped_paying(self.status_before, self.status_after)

    def to_dict(self) -> dict[str, Any]:
        return {
            "speedup_before": self.speedup_before,
            "speedup_after": self.speedup_after,
            "status_before": self.status_before,
            "status_after": self.status_after,
            "stopped_paying": self.stopped_paying,
            "cause": self.cause,
            "sentences": list(self.sentences),
            "floor": self.floor,
            "break_even": self.break_even,
            "short": self.short,
            "interval_before": list(self.interval_before) if self.interval_before else None,
            "interval_after": list(self.interval_after) if self.interval_after else None,
        }


def label(name: str) -> str:
    """The human name of a metric: its role's label, else the metric name itself."""
    role = ROLES.get(name)
    return role.label if role else name


def mode_phrase(mode: str | None) -> str:
    """' with piecewise CUDA graphs' for a metric measured in that mode; '' without one."""
    if not mode:
        return ""
    return " " + MODES.get(mode, f"in {mode} mode")


def judge(
    metrics: Mapping[str, Judged],
    min_effect: float,
    floor: float | None = None,
    intervals: tuple[Interval | None, Interval | None] = (None, None),
) -> SpeculationJudgement | None:
    """Speculation verdict in words, or None when the run measured no speculation metric.
    ``floor``: the configured speed-up below which speculation is called out, as below 1.
    ``intervals``: the speed-up's interval of each side, base and head (`speedup_intervals`):
    the call-out decides on them; a side without one (a single round) is decided on its point."""
    if not SPECULATION_METRICS & metrics.keys():
        return None
    before, after = _speedups(metrics)
    status_before, status_after = _status(before, min_effect), _status(after, min_effect)
    cause = _cause(metrics, min_effect)
    sentences = _speed_sentences(metrics, (before, after), (status_before, status_after)) + _cause_sentences(
        metrics, cause, min_effect
    )
    line, short = break_even(metrics, before, after, floor, intervals)
    return SpeculationJudgement(
        before,
        after,
        status_before,
        status_after,
        cause,
        tuple(sentences),
        floor,
        line,
        short,
        *intervals,
    )


def speedup_intervals(results: Results, confidence: float) -> tuple[Interval | None, Interval | None]:
    """Each side's ``confidence`` interval of the speed-up of speculation: from each round's own
    speed-up (its speculative over its plain rate, or the speed-up it reports), the t-interval of
    their mean log, as a ratio. None for a side of fewer than two such rounds."""
    return (
        _interval(_round_speedups(results, SIDES[0]), confidence),
        _interval(_round_speedups(results, SIDES[1]), confidence),
    )


def _round_speedups(results: Results, side: Literal["base", "head"]) -> list[float]:
    found = []
    for round_ in results.rounds_of(side):
        values = round_.metrics if round_.ok else {}
        if SPEC_TOK_S in values and BASELINE_TOK_S in values:
            speedup = _ratio(float(values[SPEC_TOK_S]), float(values[BASELINE_TOK_S]))
        elif SPEEDUP in values:
            speedup = float(values[SPEEDUP])
        else:
            continue
        if speedup is not None and math.isfinite(speedup) and speedup > 0:
            found.append(speedup)
    return found


def _interval(speedups: Sequence[float], confidence: float) -> Interval | None:
    n = len(speedups)
    if n < 2:
        return None
    logs = [math.log(x) for x in speedups]
    mean = math.fsum(logs) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in logs) / (n - 1))
    # Imported here: the runner's suites read this module's constants, and SciPy (with NumPy) costs
    # `perfbot bench run`'s start a third of a second before its processes can start.
    from scipy.special import stdtrit  # Student's t quantile

    reach = float(stdtrit(n - 1, 0.5 + confidence / 2)) * sd / math.sqrt(n)
    low, high = mean - reach, mean + reach
    if not (math.isfinite(low) and math.isfinite(high)) or max(abs(low), abs(high)) > 700:
        return None
    return math.exp(low), math.exp(high)


def break_even(
    metrics: Mapping[str, Judged],
    before: float | None,
    after: float | None,
    floor: float | None = None,
    intervals: tuple[Interval | None, Interval | None] = (None, None),
) -> tuple[str | None, bool]:
    """The line that calls out where speculation stands against not speculating, and whether it
    warns: the speed-up (head, with base's) fell below 1 ('speculation now costs more than it
    saves') or below the configured ``floor``, stays there, or came back; with the accept length
    apart from the kernel and the communication time. A side is below a bound only where its
    whole interval is, above it only where its whole interval is (its point, without one): a
    speed-up whose interval holds 1 is at break-even, and no line calls it either way. None when
    nothing crossed or stays below."""
    if after is None:
        return None, False
    was_interval, now_interval = intervals

    def below(speedup: float | None, interval: Interval | None, bound: float) -> bool:
        return speedup is not None and (interval[1] < bound if interval else speedup < bound)

    def above(speedup: float | None, interval: Interval | None, bound: float) -> bool:
        return speedup is not None and (interval[0] > bound if interval else speedup >= bound)

    if below(after, now_interval, 1):
        dropped = not below(before, was_interval, 1)
        lead = (
            "Speculation now costs more than it saves"
            if dropped
            else "Speculation still costs more than it saves"
        )
        short = True
    elif floor is not None and below(after, now_interval, floor):
        lead = (
            f"The speed-up of speculation fell below the configured floor of {floor:.2f}×"
            if not below(before, was_interval, floor)
            else f"The speed-up of speculation stays below the configured floor of {floor:.2f}×"
        )
        short = True
    elif below(before, was_interval, 1) and above(after, now_interval, 1):
        lead, short = "Speculation pays again", False
    elif floor is not None and below(before, was_interval, floor) and above(after, now_interval, floor):
        lead, short = f"The speed-up of speculation is back above the configured floor of {floor:.2f}×", False
    else:
        return None, False
    # The interval itself is not repeated here: the table row of the speed-up gives the numbers.
    said = f" (base: {before:.2f}×)" if before is not None else ""
    return f"{lead}: {after:.2f}× the tokens per second without speculation{said}. {_apart(metrics)}", short


def _apart(metrics: Mapping[str, Judged]) -> str:
    """'Accept length 1.79 → 1.79 tokens. Kernel time: ...; communication: ...': what a cycle
    yields kept apart from what it costs, and the plain step the speed-up is measured against."""
    accept = metrics.get(ACCEPT_LENGTH)
    parts = [
        f"Accept length {_span(accept)}."
        if accept is not None
        else "Accept length: not measured by this suite (a configured constant), so the speed-up "
        "moved with the time alone."
    ]
    kernels = [p for p in CYCLE_PARTS if p in metrics and p not in COMMUNICATION]
    talk = [p for p in CYCLE_PARTS if p in metrics and p in COMMUNICATION]
    for title, names in (("Kernel time", kernels), ("Communication", talk)):
        if names:
            parts.append(f"{title}: " + "; ".join(f"{label(p)} {_span(metrics[p])}" for p in names) + ".")
    if PLAIN_STEP in metrics:
        parts.append(f"Without speculation: {label(PLAIN_STEP)} {_span(metrics[PLAIN_STEP])}.")
    return " ".join(parts)


def _span(metric: Judged) -> str:
    """'17.03 → 26.99 ms': base to head."""
    unit = f" {metric.unit}" if metric.unit else ""
    return f"{number(metric.base_center)} → {number(metric.head_center)}{unit}"


def _stopped_paying(before: Status | None, after: Status | None) -> bool:
    return after == "costs" and before != "costs"


def _speedups(metrics: Mapping[str, Judged]) -> tuple[float | None, float | None]:
    spec, plain = metrics.get(SPEC_TOK_S), metrics.get(BASELINE_TOK_S)
    if spec and plain:
        return _ratio(spec.base_center, plain.base_center), _ratio(spec.head_center, plain.head_center)
    speedup = metrics.get(SPEEDUP)
    if speedup:
        return speedup.base_center, speedup.head_center
    return None, None


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _status(speedup: float | None, min_effect: float) -> Status | None:
    if speedup is None:
        return None
    if speedup >= 1 + min_effect:
        return "pays"
    return "costs" if speedup <= 1 - min_effect else "break-even"


def _speed_sentences(
    metrics: Mapping[str, Judged],
    speedups: tuple[float | None, float | None],
    statuses: tuple[Status | None, Status | None],
) -> list[str]:
    """What the speedup before and after (base, head) says; statuses: theirs, the same way."""
    before, after = speedups
    status_before, status_after = statuses
    if after is None:
        return []
    now = _versus(metrics, "head", after)
    was = "" if before is None else f" (before: {_versus(metrics, 'base', before, brief=True)})"
    if _stopped_paying(status_before, status_after):
        return [f"Speculation no longer pays: {now}{was}."]
    if status_after == "costs":
        return [f"Speculation does not pay, before or after this change: {now}{was}."]
    if status_after == "break-even":
        return [f"Speculation is at break-even: {now}{was}."]
    if status_before in ("costs", "break-even"):
        return [f"Speculation pays again: {now}{was}."]
    return [f"Speculation still pays: {now}{was}."]


def _versus(metrics: Mapping[str, Judged], side: str, speedup: float, brief: bool = False) -> str:
    """'EAGLE-3 decodes at 60 tok/s, 27% slower than the 82 tok/s without speculation';
    brief: '94 vs 89 tok/s, 6% faster'."""
    faster = f"{abs(speedup - 1):.0%} {'faster' if speedup >= 1 else 'slower'}"
    spec, plain = metrics.get(SPEC_TOK_S), metrics.get(BASELINE_TOK_S)
    if spec and plain:
        spec_value = spec.base_center if side == "base" else spec.head_center
        plain_value = plain.base_center if side == "base" else plain.head_center
        if brief:
            return f"{number(spec_value)} vs {number(plain_value)} {plain.unit}, {faster}"
        return (
            f"EAGLE-3 decodes at {number(spec_value)} {spec.unit}, {faster} than the "
            f"{number(plain_value)} {plain.unit} without speculation"
        )
    if brief:
        return f"{speedup:.2f}x, {faster}"
    return f"speculative speedup {speedup:.2f}x, {faster} than not speculating"


def _changed(metric: Judged | None) -> bool:
    return metric is not None and metric.verdict in ("regression", "improvement")


def _steady(metric: Judged | None, min_effect: float) -> bool:
    """Unchanged, or no measurable change: the change is small and not claimed."""
    if metric is None or metric.change is None:
        return False
    return metric.verdict == "unchanged" or (
        metric.verdict == "inconclusive" and abs(metric.change) < min_effect
    )


def _cause(metrics: Mapping[str, Judged], min_effect: float) -> Cause:
    accept = metrics.get(ACCEPT_LENGTH)
    cycle_changed = _changed(metrics.get(CYCLE)) or (
        CYCLE not in metrics and any(_changed(metrics.get(p)) for p in CYCLE_PARTS)
    )
    if _changed(accept) and cycle_changed:
        return "both"
    if _changed(accept):
        return "accept_length"
    if cycle_changed:
        return "cycle_time"
    cycle = metrics.get(CYCLE)
    if _steady(accept, min_effect) and _steady(cycle, min_effect):
        return "none"
    return "unknown"


def _cause_sentences(metrics: Mapping[str, Judged], cause: Cause, min_effect: float) -> list[str]:
    accept, cycle = metrics.get(ACCEPT_LENGTH), metrics.get(CYCLE)
    sentences = []
    if cause in ("accept_length", "both") and accept is not None:
        sentences.append(
            f"Accept length {_moved(accept)}: the draft model or the sampling changed what gets accepted."
        )
    if cause in ("cycle_time", "both") and cycle is not None and _changed(cycle):
        same = ""
        if accept is not None and _steady(accept, min_effect):
            same = f" at the same accept length ({number(accept.head_center)})"
        sentences.append(
            f"Cycle time {_moved(cycle)}{same}: a kernel or communication change, not the draft."
        )
    parts = [p for p in CYCLE_PARTS if _changed(metrics.get(p))]
    if parts:
        steady_cycle = " — yet the cycle time did not move measurably" if _steady(cycle, min_effect) else ""
        sentences.append(
            "Within the cycle: "
            + "; ".join(f"{label(p)} {_moved(metrics[p])}" for p in parts)
            + f"{steady_cycle}."
        )
    if COMMUNICATION.intersection(parts):
        sentences.append(
            "The allreduce moved: look at the communication path (NCCL, custom allreduce, parallel state)."
        )
    if cause == "none":
        sentences.append("Neither the accept length nor the cycle time changed measurably.")
    return sentences


def _moved(metric: Judged) -> str:
    """'grew from 19.0 to 29.0 ms (+52.6%)'."""
    change = metric.change or 0.0
    verb = "grew" if change > 0 else "fell"
    unit = f" {metric.unit}" if metric.unit else ""
    return (
        f"{verb} from {number(metric.base_center)} to {number(metric.head_center)}{unit} ({percent(change)})"
    )
