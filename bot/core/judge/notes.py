"""The comparison's words beside its verdicts: notes (failed rounds, outliers left out, a change
of shape, a diagnostic's claim) and warnings (the environment changed during a run or differs
by side, rounds that repeat one value to the last bit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.core.judge import envdiff
from bot.core.judge.estimate import OUTLIER_MADS
from bot.core.judge.quantities import number
from bot.core.judge.results import SIDES, Results
from bot.core.judge.verdicts import _CLAIMS, MetricJudgement

WITHHELD_WARNING = (
    "base and head ran in different environments (see the environment diff): no "
    "regression or improvement is claimed"
)


def metric_notes(metrics: Sequence[MetricJudgement]) -> list[str]:
    notes = [
        f"{m.name}: the head rounds are spread differently from the base rounds "
        f"(Kolmogorov-Smirnov p={m.estimate.p_ks:.2g}) although the change is not measurable; "
        "look at the per-round values"
        for m in metrics
        if m.shape_changed
    ]
    for m in metrics:
        base, head = m.estimate.outliers
        if base or head:
            notes.append(
                f"{m.name}: {base} base and {head} head rounds were far outliers "
                f"(over {OUTLIER_MADS:g} robust deviations from their side's median) and were "
                "left out"
            )
    if any(m.primary for m in metrics):
        notes += [
            f"{m.name} is a diagnostic: its {m.verdict} explains, the verdict follows the primary metrics"
            for m in metrics
            if not m.primary and m.verdict in _CLAIMS
        ]
    return notes


def identical_rounds(values: Mapping[str, tuple[Sequence[float], Sequence[float]]]) -> list[str]:
    """A warning per metric whose rounds of a side (two or more) all gave one value to the last
    bit: no timing repeats itself exactly, so the number is a count, or a file read again rather
    than measured, and the interval's width (none) says nothing of its precision."""
    warnings_ = []
    for name, sides in values.items():
        same = [
            side
            for side, rounds in zip(SIDES, sides, strict=True)
            if len(rounds) >= 2 and len(set(rounds)) == 1
        ]
        if not same:
            continue
        which = "both sides" if len(same) == 2 else f"the {same[0]} side"
        shown = ", ".join(f"{number(values[name][SIDES.index(side)][0])} on {side}" for side in same)
        warnings_.append(
            f"{name}: every round of {which} gave the same value to the last bit ({shown}): a number "
            "that does not vary (a deterministic count, a saved file read again) is no timing, and "
            "its interval's zero width is not precision"
        )
    return warnings_


def drift_warnings(results: Results, ignore_env: tuple[str, ...]) -> list[str]:
    warnings_ = []
    for side in SIDES:
        changed = [d for d in envdiff.drift(results.revision(side).fingerprint, ignore_env) if d.material]
        if changed:
            first = changed[0]
            more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
            warnings_.append(
                f"the {side} environment changed during the run: {first.key} "
                f"{first.base} -> {first.head}{more}"
            )
    return warnings_


def run_notes(results: Results) -> list[str]:
    notes = []
    if results.status not in (None, "complete"):
        why = f": {results.error[:200]}" if results.error else ""
        notes.append(f"the run did not complete (status {results.status}){why}")
    if not results.metrics:
        notes.append("no round measured anything, so there is nothing to judge")
    for side in SIDES:
        rounds, failed = results.rounds_of(side), results.failures(side)
        if failed:
            first = failed[0].error or "no error message"
            notes.append(
                f"{len(failed)} of {len(rounds)} {side} rounds failed and "
                f"{'was' if len(failed) == 1 else 'were'} left out "
                f"(first: {first[:200]})"
            )
    return notes
