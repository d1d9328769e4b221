"""The verdict on one metric (`MetricJudgement`) from its `Estimate` and its (adjusted) p-value:
``regression`` / ``improvement`` when significant at ``alpha`` and at least ``min_effect``;
``unchanged`` when the interval lies within ``±min_effect`` (an equivalence test); ``inconclusive``
otherwise, with the rounds per side likely to decide; ``error`` when no ratio can be formed. At
least `MIN_ROUNDS` rounds per side before anything but inconclusive. Direction-aware
(``better``: ``lower`` or ``higher``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bot.core import vocabulary
from bot.core.judge import model
from bot.core.judge.estimate import DEFAULT_CONFIDENCE, Estimate, estimate
from bot.core.judge.results import Role

Verdict = vocabulary.Verdict
Better = vocabulary.Better
DEFAULT_MIN_EFFECT = vocabulary.MIN_EFFECT
DEFAULT_ALPHA = 0.01
MIN_ROUNDS = 3
MAX_EXTRA_ROUNDS = 1000
_CLAIMS = vocabulary.CLAIMS


@dataclass(frozen=True, slots=True)
class MetricJudgement:
    """The verdict on one metric, with the numbers behind it."""

    name: str
    unit: str
    better: Better
    estimate: Estimate
    p_value: float
    verdict: Verdict
    reason: str
    extra_rounds: int | None = None
    # Kolmogorov-Smirnov says the rounds are distributed differently though no change is claimed.
    shape_changed: bool = False
    role: Role = "primary"
    mode: str | None = None  # how the engine ran, as the results file declares it
    # The interval the verdict used, and its level: for a claim or an inconclusive change, the
    # interval of the significance test at the level that metric was tested at (``alpha`` after
    # Holm and the looks of an adaptive run), which excludes 1 exactly when the test is
    # significant; for "unchanged", the equivalence test's ``confidence`` interval. None: no model.
    interval: tuple[float, float] | None = None
    interval_confidence: float | None = None

    @property
    def base_median(self) -> float | None:
        return self.estimate.base_median

    @property
    def head_median(self) -> float | None:
        return self.estimate.head_median

    @property
    def base_center(self) -> float | None:
        return self.estimate.base_center

    @property
    def head_center(self) -> float | None:
        return self.estimate.head_center

    @property
    def ratio(self) -> float | None:
        return self.estimate.ratio

    @property
    def change(self) -> float | None:
        """Relative change, head vs base (+0.53 = 53% higher)."""
        return None if self.estimate.ratio is None else self.estimate.ratio - 1

    @property
    def primary(self) -> bool:
        return self.role != "diagnostic"

    def to_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {
            "name": self.name,
            "unit": self.unit,
            "better": self.better,
            "base_median": e.base_median,
            "head_median": e.head_median,
            "ratio": e.ratio,
            "ci": list(e.ci) if e.ci else None,
            "p_value": self.p_value,
            "verdict_interval": None
            if self.interval is None
            else {"low": self.interval[0], "high": self.interval[1], "confidence": self.interval_confidence},
            "p_value_unadjusted": e.p_value,
            "verdict": self.verdict,
            "reason": self.reason,
            "p_values": {"model": e.p_value, "mann_whitney": e.p_mwu, "welch_log": e.p_t, "ks": e.p_ks},
            "shape_changed": self.shape_changed,
            "rounds": {"base": e.base_n, "head": e.head_n},
            "outliers": {"base": e.outliers[0], "head": e.outliers[1]},
            "extra_rounds": self.extra_rounds,
            "role": self.role,
            "mode": self.mode,
            "base_mean": e.base_center,
            "head_mean": e.head_center,
            "model": None
            if e.fit is None
            else {"df": e.fit.df, "weighted": e.fit.weighted, "tau": math.sqrt(e.fit.tau2)},
        }


@dataclass(frozen=True, slots=True)
class Settings:
    """How a comparison was judged. ``alpha`` is the level the verdicts used: the requested one
    divided over the ``looks`` of an adaptive run."""

    min_effect: float = DEFAULT_MIN_EFFECT
    alpha: float = DEFAULT_ALPHA
    confidence: float = DEFAULT_CONFIDENCE
    looks: int = 1


def judge(
    base: Sequence[float],
    head: Sequence[float],
    better: Better = "lower",
    min_effect: float = DEFAULT_MIN_EFFECT,
    alpha: float = DEFAULT_ALPHA,
    *,
    name: str = "metric",
    unit: str = "",
    confidence: float = DEFAULT_CONFIDENCE,
    base_se: Sequence[float] | None = None,
    head_se: Sequence[float] | None = None,
    role: Role = "primary",
    mode: str | None = None,
) -> MetricJudgement:
    """Judge one metric from the per-round values of each side; never raises on any floats.

    This is the rule `perfbot bench run` uses to decide whether to run more rounds: keep going
    while the verdict is ``inconclusive`` and ``extra_rounds`` is not None, up to the run's cap.
    When looking after every few rounds, divide ``alpha`` by the number of looks planned
    (`alpha_per_look`) so that peeking does not raise the false-alarm rate. Judging several
    metrics of one run: use `decide` on the results file (Holm across the primary metrics).

    ``better``: ``"lower"`` (times) or ``"higher"`` (throughput). ``min_effect``: smallest
    relative change worth reporting (0.02 = 2%). ``base_se`` / ``head_se``: each round's standard
    error (`Results.spreads`), to weigh the rounds.
    """
    settings = Settings(min_effect, alpha, confidence)
    found = estimate(base, head, confidence=confidence, base_se=base_se, head_se=head_se)
    return classify(name, unit, better, found, found.p_value, settings, family=1, role=role, mode=mode)


def classify(
    name: str,
    unit: str,
    better: Better,
    found: Estimate,
    p_value: float,
    settings: Settings,
    family: int = 1,
    role: Role = "primary",
    mode: str | None = None,
) -> MetricJudgement:
    """The verdict for one metric, given its (possibly multiplicity-adjusted) p-value; ``family``:
    the number of hypotheses it was adjusted among."""

    def verdict(kind: Verdict, reason: str, extra: int | None = None) -> MetricJudgement:
        shape = kind in ("unchanged", "inconclusive") and found.p_ks <= settings.alpha / family
        confidence = (
            settings.confidence if kind == "unchanged" else 1 - tested_at(found, p_value, settings, family)
        )
        interval = _interval(found, confidence)
        return MetricJudgement(
            name,
            unit,
            better,
            found,
            p_value,
            kind,
            reason,
            extra,
            shape,
            role,
            mode,
            interval,
            confidence if interval is not None else None,
        )

    if found.problem or found.ratio is None:
        return verdict("error", found.problem or "no ratio")
    m, change = settings.min_effect, found.ratio - 1
    enough = found.rounds >= MIN_ROUNDS and found.fit is not None
    if enough and p_value <= settings.alpha and abs(change) >= m:
        kind = vocabulary.direction(change, better)
        return verdict(kind, f"significant (p={p_value:.2g}) and {abs(change):.1%} >= {m:.1%}")
    if enough and found.ci and 1 - m < found.ci[0] and found.ci[1] < 1 + m:
        return verdict("unchanged", f"the {settings.confidence:.0%} interval lies within ±{m:.1%}")
    extra = extra_rounds(found, m, settings.alpha / family, settings.confidence)
    if not enough:
        return verdict("inconclusive", f"fewer than {MIN_ROUNDS} successful rounds per side", extra)
    return verdict(
        "inconclusive",
        f"not significant at this size (p={p_value:.2g}) and the interval reaches beyond ±{m:.1%}",
        extra,
    )


def tested_at(found: Estimate, p_value: float, settings: Settings, family: int) -> float:
    """The level this metric's own test was held to: significant means ``p_value`` (adjusted)
    <= ``alpha``, which for Holm is the unadjusted p-value <= ``alpha x raw / adjusted``, a level
    between ``alpha / family`` and ``alpha``. Its interval at ``1 - level`` therefore excludes 1
    exactly when the verdict found the change significant."""
    raw = found.p_value
    if raw <= 0 or p_value <= 0:
        return settings.alpha / max(1, family)
    return settings.alpha * min(1.0, raw / p_value)


def _interval(found: Estimate, confidence: float) -> tuple[float, float] | None:
    """The model's ``confidence`` interval of the ratio; None without a model or when too wide to
    write down (as `estimate` treats its own)."""
    if found.fit is None or found.problem or found.ratio is None:
        return None
    with np.errstate(all="ignore"):
        low, high = found.fit.interval(confidence)
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


def extra_rounds(found: Estimate, min_effect: float, alpha: float, confidence: float) -> int:
    """Rounds per side to add so that the verdict is likely settled either way, if the rounds keep
    scattering as they did (`model.rounds_to_decide`); at least enough to reach `MIN_ROUNDS`."""
    have = found.rounds
    floor = max(1, MIN_ROUNDS - have)
    if found.fit is None or have < 2:
        return floor
    needed = model.rounds_to_decide(found.fit, min_effect, alpha, confidence, have, have + MAX_EXTRA_ROUNDS)
    return int(min(MAX_EXTRA_ROUNDS, max(floor, needed - have)))


def _without_claim(m: MetricJudgement, why: str) -> MetricJudgement:
    """``m`` with any regression or improvement taken back as inconclusive, saying ``why``."""
    if m.verdict not in _CLAIMS:
        return m
    return dataclasses.replace(
        m, verdict="inconclusive", extra_rounds=None, reason=f"would be a {m.verdict}, but {why}"
    )


def _heading_worse(m: MetricJudgement, settings: Settings) -> bool:
    change = m.change or 0.0
    return vocabulary.direction(change, m.better) == "regression" and abs(change) >= settings.min_effect
