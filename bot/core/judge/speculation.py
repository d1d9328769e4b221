"""EAGLE-3 speculative decoding in words: does speculation still pay, and what changed — the
accept length (draft model, sampling) or the cycle time at the same accept length (kernels,
communication).

`ROLES` is the one place that maps the metric names the runner's suites emit (sglang-eagle3,
verify-step) to what they mean; renderers take their labels from here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bot.core.judge.quantities import number, percent

Kind = Literal["time", "rate", "count", "ratio"]
Cause = Literal["accept_length", "cycle_time", "both", "none", "unknown"]
Status = Literal["pays", "break-even", "costs"]


@dataclass(frozen=True, slots=True)
class MetricRole:
    label: str
    kind: Kind
    meaning: str


ROLES: dict[str, MetricRole] = {
    "spec_tok_s": MetricRole("EAGLE-3 decoding", "rate",
                             "tokens per second per request with speculation on"),
    "baseline_tok_s": MetricRole("non-speculative decoding", "rate",
                                 "tokens per second per request with speculation off"),
    "accept_length": MetricRole("the EAGLE-3 accept length", "count",
                                "tokens gained per draft+verify cycle (1 + accepted drafts)"),
    "cycle_ms": MetricRole("the EAGLE-3 cycle", "time",
                           "one draft+verify cycle; 1000 * accept_length / spec_tok_s"),
    "spec_speedup": MetricRole("the speculative speedup", "ratio",
                               "spec_tok_s / baseline_tok_s; below 1 speculation costs speed"),
    "ttft_ms": MetricRole("time to first token", "time", "prefill latency of a request"),
    "baseline_ttft_ms": MetricRole("time to first token without speculation", "time",
                                   "prefill latency with speculation off"),
    "verify_ms": MetricRole("the EAGLE-3 verify step", "time",
                            "target-model verify pass of one cycle (allreduce-bound under TP)"),
    "verify_graph_ms": MetricRole("the EAGLE-3 verify step (CUDA graph)", "time",
                                  "verify pass replayed as one CUDA graph"),
    "verify_piecewise_ms": MetricRole("the EAGLE-3 verify step (piecewise CUDA graph)", "time",
                                      "verify pass as graphed pieces with eager allreduces between"),
    "verify_eager_ms": MetricRole("the EAGLE-3 verify step (eager)", "time",
                                  "verify pass without CUDA graphs"),
    "allreduce_us": MetricRole("the allreduce", "time", "one tensor-parallel allreduce call"),
    "allreduce_verify_us": MetricRole("the verify-sized allreduce", "time",
                                      "one allreduce of a verify step's activations"),
    "allreduce_draft_us": MetricRole("the draft-sized allreduce", "time",
                                     "one allreduce of a draft step's activations"),
    "draft_ms": MetricRole("the EAGLE-3 draft steps", "time", "the draft head's steps of one cycle"),
    "tok_s": MetricRole("EAGLE-3 decoding", "rate",
                        "tokens per second for the configured accept length (verify-step suite)"),
}
# How the engine ran a measurement (a results file's metric ``mode``), in words.
MODES = {"full": "with one CUDA graph per pass", "piecewise": "with piecewise CUDA graphs",
         "eager": "in eager mode"}
CYCLE_PARTS = ("verify_ms", "verify_graph_ms", "verify_piecewise_ms", "verify_eager_ms", "draft_ms",
               "allreduce_us", "allreduce_verify_us", "allreduce_draft_us")
SPECULATION_METRICS = frozenset(("spec_tok_s", "spec_speedup", "accept_length", "cycle_ms"))


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


@dataclass(frozen=True, slots=True)
class SpeculationJudgement:
    """Speedup of speculation over not speculating, before and after, and the cause of a change."""

    speedup_before: float | None
    speedup_after: float | None
    status_before: Status | None
    status_after: Status | None
    cause: Cause
    sentences: tuple[str, ...] = ()

    @property
    def stopped_paying(self) -> bool:
        return _stopped_paying(self.status_before, self.status_after)

    def to_dict(self) -> dict[str, Any]:
        return {"speedup_before": self.speedup_before, "speedup_after": self.speedup_after,
                "status_before": self.status_before, "status_after": self.status_after,
                "stopped_paying": self.stopped_paying, "cause": self.cause,
                "sentences": list(self.sentences)}


def label(name: str) -> str:
    """The human name of a metric: its role's label, else the metric name itself."""
    role = ROLES.get(name)
    return role.label if role else name


def mode_phrase(mode: str | None) -> str:
    """' with piecewise CUDA graphs' for a metric measured in that mode; '' without one."""
    if not mode:
        return ""
    return " " + MODES.get(mode, f"in {mode} mode")


def judge(metrics: Mapping[str, Judged], min_effect: float) -> SpeculationJudgement | None:
    """Speculation verdict in words, or None when the run measured no speculation metric."""
    if not SPECULATION_METRICS & metrics.keys():
        return None
    before, after = _speedups(metrics)
    status_before, status_after = _status(before, min_effect), _status(after, min_effect)
    cause = _cause(metrics, min_effect)
    sentences = _speed_sentences(metrics, (before, after), (status_before, status_after)) + \
        _cause_sentences(metrics, cause, min_effect)
    return SpeculationJudgement(before, after, status_before, status_after, cause, tuple(sentences))


def _stopped_paying(before: Status | None, after: Status | None) -> bool:
    return after == "costs" and before != "costs"


def _speedups(metrics: Mapping[str, Judged]) -> tuple[float | None, float | None]:
    spec, plain = metrics.get("spec_tok_s"), metrics.get("baseline_tok_s")
    if spec and plain:
        return _ratio(spec.base_center, plain.base_center), _ratio(spec.head_center, plain.head_center)
    speedup = metrics.get("spec_speedup")
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


def _speed_sentences(metrics: Mapping[str, Judged], speedups: tuple[float | None, float | None],
                     statuses: tuple[Status | None, Status | None]) -> list[str]:
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
    spec, plain = metrics.get("spec_tok_s"), metrics.get("baseline_tok_s")
    if spec and plain:
        spec_value = spec.base_center if side == "base" else spec.head_center
        plain_value = plain.base_center if side == "base" else plain.head_center
        if brief:
            return f"{number(spec_value)} vs {number(plain_value)} {plain.unit}, {faster}"
        return (f"EAGLE-3 decodes at {number(spec_value)} {spec.unit}, {faster} than the "
                f"{number(plain_value)} {plain.unit} without speculation")
    if brief:
        return f"{speedup:.2f}x, {faster}"
    return f"speculative speedup {speedup:.2f}x, {faster} than not speculating"


def _changed(metric: Judged | None) -> bool:
    return metric is not None and metric.verdict in ("regression", "improvement")


def _steady(metric: Judged | None, min_effect: float) -> bool:
    """Unchanged, or no measurable change: the change is small and not claimed."""
    if metric is None or metric.change is None:
        return False
    return metric.verdict == "unchanged" or (metric.verdict == "inconclusive"
                                              and abs(metric.change) < min_effect)


def _cause(metrics: Mapping[str, Judged], min_effect: float) -> Cause:
    accept = metrics.get("accept_length")
    cycle_changed = _changed(metrics.get("cycle_ms")) or (
        "cycle_ms" not in metrics and any(_changed(metrics.get(p)) for p in CYCLE_PARTS))
    if _changed(accept) and cycle_changed:
        return "both"
    if _changed(accept):
        return "accept_length"
    if cycle_changed:
        return "cycle_time"
    cycle = metrics.get("cycle_ms")
    if _steady(accept, min_effect) and _steady(cycle, min_effect):
        return "none"
    return "unknown"


def _cause_sentences(metrics: Mapping[str, Judged], cause: Cause, min_effect: float) -> list[str]:
    accept, cycle = metrics.get("accept_length"), metrics.get("cycle_ms")
    sentences = []
    if cause in ("accept_length", "both") and accept is not None:
        sentences.append(f"Accept length {_moved(accept)}: the draft model or the sampling "
                         "changed what gets accepted.")
    if cause in ("cycle_time", "both") and cycle is not None and _changed(cycle):
        same = ""
        if accept is not None and _steady(accept, min_effect):
            same = f" at the same accept length ({number(accept.head_center)})"
        sentences.append(f"Cycle time {_moved(cycle)}{same}: a kernel or communication "
                         "change, not the draft.")
    parts = [p for p in CYCLE_PARTS if _changed(metrics.get(p))]
    if parts:
        steady_cycle = " — yet the cycle time did not move measurably" if _steady(cycle, min_effect) else ""
        sentences.append("Within the cycle: " + "; ".join(
            f"{label(p)} {_moved(metrics[p])}" for p in parts) + f"{steady_cycle}.")
    if any(p.startswith("allreduce") for p in parts):
        sentences.append("The allreduce moved: look at the communication path (NCCL, custom "
                         "allreduce, parallel state).")
    if cause == "none":
        sentences.append("Neither the accept length nor the cycle time changed measurably.")
    return sentences


def _moved(metric: Judged) -> str:
    """'grew from 19.0 to 29.0 ms (+52.6%)'."""
    change = metric.change or 0.0
    verb = "grew" if change > 0 else "fell"
    unit = f" {metric.unit}" if metric.unit else ""
    return (f"{verb} from {number(metric.base_center)} to {number(metric.head_center)}{unit} "
            f"({percent(change)})")
