"""The round model: what the rounds of one metric say about the change from base to head.

Each round is a fresh process, so rounds differ by more than their timed calls scatter (memory
layout, clocks, how the ranks met): the **round is the unit of replication**. The model is the
two-level (random-effects) model of a meta-analysis, with the rounds as its studies::

    log(value of round i) = side mean + round effect (variance tau^2) + call noise (variance w_i)

``w_i`` is the squared relative standard error of round i's value, from the scatter of its ~100
timed calls (`results.RoundSpread`), when the runner recorded it. The between-round variance
``tau^2`` is estimated from the rounds (Paule-Mandel), each round is weighted by
``1 / (tau^2 + w_i)``, and the change is the difference of the weighted side means, with a
Knapp-Hartung t interval on ``rounds - 2`` degrees of freedom, its variance never narrower than the
calls' own scatter implies. So a round whose calls scattered more counts less, but calls are never
treated as independent: however many calls a round holds, it adds one degree of freedom. Without
spreads every round weighs the same and the test is Student's t on the log round values.

Equivalence (TOST): the interval at ``confidence`` lies inside ``±min_effect``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy import stats as scipy_stats


@dataclass(frozen=True, slots=True)
class Fit:
    """The change on the log scale (``delta``: head minus base) and how sure the rounds are of it."""

    delta: float
    se: float
    df: int
    base_center: float  # weighted geometric mean of the base rounds
    head_center: float
    weighted: bool  # rounds weighted by their spreads (else all alike)
    tau2: float  # between-round variance, on the log scale

    @property
    def ratio(self) -> float:
        return math.exp(self.delta)

    def interval(self, confidence: float) -> tuple[float, float]:
        """The ``confidence`` interval of the ratio head / base."""
        if self.se == 0:
            return self.ratio, self.ratio
        half = float(scipy_stats.t.ppf(0.5 + confidence / 2, self.df)) * self.se
        with np.errstate(over="ignore"):
            return float(np.exp(self.delta - half)), float(np.exp(self.delta + half))

    @property
    def p_value(self) -> float:
        """Two-sided p-value of "no change"."""
        if self.se == 0:
            return 0.0 if self.delta else 1.0
        return float(2 * scipy_stats.t.sf(abs(self.delta) / self.se, self.df))


def fit(
    base: np.ndarray, head: np.ndarray, base_se: np.ndarray | None = None, head_se: np.ndarray | None = None
) -> Fit | None:
    """Fit the model to positive round values (and their standard errors, in the same unit);
    None when there is no degree of freedom left (fewer than 3 rounds, or one side empty)."""
    if not base.size or not head.size or base.size + head.size < 3:
        return None
    y = (np.log(base), np.log(head))
    within = None
    if base_se is not None and head_se is not None:
        relative = (base_se / base, head_se / head)
        if all(np.all(np.isfinite(r)) and np.all(r > 0) for r in relative):
            within = (relative[0] ** 2, relative[1] ** 2)
    rounds = base.size + head.size
    if within is None:
        means = [float(np.mean(side)) for side in y]
        pooled = sum(float(np.sum((side - m) ** 2)) for side, m in zip(y, means, strict=True)) / (rounds - 2)
        se = math.sqrt(pooled * (1 / base.size + 1 / head.size))
        return Fit(means[1] - means[0], se, rounds - 2, math.exp(means[0]), math.exp(means[1]), False, pooled)
    tau2 = _paule_mandel(y, within, rounds - 2)
    weights = [1 / (tau2 + w) for w in within]
    means = [float(np.sum(wt * side) / np.sum(wt)) for wt, side in zip(weights, y, strict=True)]
    spread = sum(1 / float(np.sum(wt)) for wt in weights)
    q = _q(y, within, tau2) / (rounds - 2)
    se = math.sqrt(max(q, 1.0) * spread)
    return Fit(means[1] - means[0], se, rounds - 2, math.exp(means[0]), math.exp(means[1]), True, tau2)


def rounds_to_decide(
    found: Fit, min_effect: float, alpha: float, confidence: float, have: int, cap: int
) -> int:
    """Rounds per side (in all) at which, if the rounds keep scattering as they did, the verdict
    would likely be decided: significant at ``alpha`` when the change is at least ``min_effect``,
    else the ``confidence`` interval inside ``±min_effect``; ``cap`` when even that many would not."""
    scatter = found.se / math.sqrt(2 / have)  # one round's standard deviation, as the fit saw it
    effect, band = abs(found.delta), math.log1p(min_effect)

    def decided(n: int) -> bool:
        se, df = scatter * math.sqrt(2 / n), 2 * n - 2
        if effect >= band:
            return bool(effect >= scipy_stats.t.ppf(1 - alpha / 2, df) * se)
        return bool(effect + scipy_stats.t.ppf(0.5 + confidence / 2, df) * se < band)

    low, high = have, cap  # the answer lies in (low, high]: deciding only gets easier with rounds
    if not decided(high):
        return cap
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if decided(middle) else (middle, high)
    return high


def _q(y: Sequence[np.ndarray], within: Sequence[np.ndarray], tau2: float) -> float:
    """The weighted residual sum of squares around each side's weighted mean."""
    total = 0.0
    for side, w in zip(y, within, strict=True):
        weights = 1 / (tau2 + w)
        mean = np.sum(weights * side) / np.sum(weights)
        total += float(np.sum(weights * (side - mean) ** 2))
    return total


def _paule_mandel(y: Sequence[np.ndarray], within: Sequence[np.ndarray], df: int) -> float:
    """The between-round variance at which the weighted residuals have their expected size ``df``
    (0 when the rounds scatter no more than their calls explain)."""
    if _q(y, within, 0.0) <= df:
        return 0.0
    # Beyond the plain pooled variance, the weighted residuals are already below df.
    upper = sum(float(np.sum((side - np.mean(side)) ** 2)) for side in y) / df
    return float(optimize.brentq(lambda tau2: _q(y, within, tau2) - df, 0.0, upper, xtol=1e-15, rtol=1e-12))
