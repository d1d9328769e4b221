"""What the rounds of one metric say, before any verdict (`Estimate`): the far outliers left out
of each side (`outliers`), the medians, the round model's ratio, interval and p-value (`model`),
and the rank tests, reported beside it.

Rounds that failed and values that are not finite are left out, and so are far outliers once
there are `TRIM_ROUNDS` rounds per side: rounds whose log value lies more than 5 robust deviations
from the median of its *own side*, the deviation taken over the pairs of rounds of both sides, at
most 20% of the rounds. Never raises, whatever the floats.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from bot.core.judge import model

DEFAULT_CONFIDENCE = 0.95
TRIM_ROUNDS = 5
OUTLIER_MADS = 5.0
OUTLIER_SHARE = 0.2
# Above this many rounds a side, Shamos' deviation is taken over this many of its rounds, evenly
# spaced in value order (every pair of n rounds takes n x n matrices: 5,000 rounds, ~600 MB a metric).
SPREAD_ROUNDS = 500
# The median |x - y| of two draws of a normal distribution, in standard deviations: sqrt(2) x 0.6745.
_PAIR_TO_SD = math.sqrt(2) * float(scipy_stats.norm.ppf(0.75))


@dataclass(frozen=True, slots=True)
class Estimate:
    """What the data say about one metric, before any verdict. By default it claims nothing: no
    ratio, no interval, p-values of 1 (what every ``problem`` gives)."""

    base_n: int
    head_n: int
    base_median: float | None
    head_median: float | None
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    p_mwu: float = 1.0
    p_ks: float = 1.0
    problem: str | None = None
    outliers: tuple[int, int] = (0, 0)
    p_t: float = 1.0
    fit: model.Fit | None = None

    @property
    def p_value(self) -> float:
        """The p-value the verdict uses: the round model's t-test (1 without a model)."""
        return self.fit.p_value if self.fit is not None else 1.0

    @property
    def rounds(self) -> int:
        return min(self.base_n, self.head_n)

    @property
    def base_center(self) -> float | None:
        """The base side's location the change is measured from: the model's (weighted) geometric
        mean of the rounds, else the median."""
        return self.fit.base_center if self.fit is not None else self.base_median

    @property
    def head_center(self) -> float | None:
        return self.fit.head_center if self.fit is not None else self.head_median


def estimate(
    base: Sequence[float],
    head: Sequence[float],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    base_se: Sequence[float] | None = None,
    head_se: Sequence[float] | None = None,
    exclude: tuple[np.ndarray, np.ndarray] | None = None,
) -> Estimate:
    """Medians, the round model's ratio, interval and p-value, and the rank tests; never raises.

    ``base_se`` / ``head_se``: each round's standard error, aligned with the values (ignored unless
    every round has one). ``exclude``: the far outliers to leave out per side (`outliers` of
    another metric whose rounds these are derived from); by default this metric's own."""
    (b, b_se), (h, h_se) = _finite(base, base_se), _finite(head, head_se)
    if exclude is None or exclude[0].shape != b.shape or exclude[1].shape != h.shape:
        exclude = outliers(b, h)
    b, h, b_se, h_se, dropped = _trim(b, h, b_se, h_se, exclude)
    base_median, head_median = _median(b), _median(h)
    if not b.size or not h.size:
        side = "base" if not b.size else "head"
        why = f"no successful measurement on the {side} side"
        return _estimate(b, h, base_median, head_median, problem=why)
    if base_median is None or head_median is None:
        return _estimate(b, h, base_median, head_median, problem="values too large to compare")
    if b.min() <= 0 or h.min() <= 0:
        why = (
            "the base median is not a positive number: no ratio can be formed"
            if base_median <= 0
            else "a round measured 0: the change cannot be judged as a ratio"
        )
        return _estimate(b, h, base_median, head_median, problem=why)
    with np.errstate(all="ignore"):
        fit = model.fit(b, h, b_se, h_se)
    if fit is not None and not (math.isfinite(fit.delta) and math.isfinite(fit.se) and abs(fit.delta) < 700):
        fit = None
    ratio = fit.ratio if fit is not None else head_median / base_median
    if not math.isfinite(ratio):
        return _estimate(b, h, base_median, head_median, problem="values too far apart to form a ratio")
    p_mwu, p_ks, p_t = _tests(b, h) if min(b.size, h.size) >= 2 else (1.0, 1.0, 1.0)
    ci = fit.interval(confidence) if fit is not None else None
    if ci is not None and not all(math.isfinite(end) for end in ci):
        ci = None  # an interval too wide to write down decides nothing either
    return _estimate(
        b,
        h,
        base_median,
        head_median,
        ratio=ratio,
        ci=ci,
        p_mwu=p_mwu,
        p_ks=p_ks,
        p_t=p_t,
        outliers=dropped,
        fit=fit,
    )


def _estimate(
    base: np.ndarray, head: np.ndarray, base_median: float | None, head_median: float | None, **found: Any
) -> Estimate:
    """The `Estimate` of the rounds kept of each side, with what was ``found`` (by keyword: ratio,
    ci, p-values, problem, outliers, fit); what it leaves out claims nothing."""
    return Estimate(
        base_n=base.size, head_n=head.size, base_median=base_median, head_median=head_median, **found
    )


def _finite(values: Sequence[float], errors: Sequence[float] | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The finite values, and their standard errors when every kept value has a usable one."""
    numbers, kept_errors = [], []
    paired = list(errors) if errors is not None and len(errors) == len(values) else None
    for position, value in enumerate(values):
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            continue
        if not math.isfinite(number):
            continue
        numbers.append(number)
        if paired is not None:
            kept_errors.append(paired[position])
    array = np.asarray(numbers, dtype=float)
    if paired is None:
        return array, None
    se = np.asarray(kept_errors, dtype=float)
    return array, se if np.all(np.isfinite(se)) else None


def outliers(
    base: Sequence[float] | np.ndarray, head: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The far outliers of each side, as boolean masks over its values: rounds whose log value is
    more than `OUTLIER_MADS` robust standard deviations from the median of its own side; none when
    that would leave out more than `OUTLIER_SHARE` of the rounds, or below `TRIM_ROUNDS` rounds per
    side, where one round cannot be told from a mode.

    The deviation is the median absolute difference between two rounds of the same side, over
    both sides' pairs, scaled to a standard deviation (Shamos' estimator: it needs no center, and
    a side's median, one of its own values, cannot shrink it as it shrinks a MAD of a few rounds).
    Each side's own center keeps a large true change from hiding an outlier: around the median of
    both sides pooled, a shift makes the values bimodal and the deviation swells with it. On the
    log scale a metric and its inverse (``tok_s`` of ``cycle_ms``) lose the same rounds. Above
    `SPREAD_ROUNDS` rounds a side the deviation is taken over that many of its rounds (see
    `_spread_sample`); every round is still tested against it.
    """
    b, h = np.asarray(base, dtype=float), np.asarray(head, dtype=float)
    none = np.zeros(b.shape, dtype=bool), np.zeros(h.shape, dtype=bool)
    if (
        min(b.size, h.size) < TRIM_ROUNDS
        or not (np.all(np.isfinite(b)) and np.all(np.isfinite(h)))
        or b.min() <= 0
        or h.min() <= 0
    ):
        return none
    with np.errstate(all="ignore"):
        logs = [np.log(side) for side in (b, h)]
        pairs = np.concatenate([_pair_differences(_spread_sample(side)) for side in logs])
        spread = float(np.median(pairs)) / _PAIR_TO_SD
        far = [np.abs(side - np.median(side)) > OUTLIER_MADS * spread for side in logs]
    dropped = sum(int(f.sum()) for f in far)
    if not math.isfinite(spread) or spread == 0 or dropped > OUTLIER_SHARE * (b.size + h.size):
        return none
    return far[0], far[1]


def _spread_sample(side: np.ndarray) -> np.ndarray:
    """The side itself up to `SPREAD_ROUNDS` values; above, `SPREAD_ROUNDS` of its values evenly
    spaced in sorted order (its quantiles, from the least to the greatest): deterministic, and
    blind to the order the rounds ran in."""
    if side.size <= SPREAD_ROUNDS:
        return side
    quantiles: np.ndarray = np.sort(side)[np.linspace(0, side.size - 1, SPREAD_ROUNDS).round().astype(int)]
    return quantiles


def _pair_differences(side: np.ndarray) -> np.ndarray:
    """``|x - y|`` for every pair of two of the side's values."""
    differences: np.ndarray = np.abs(side[:, None] - side[None, :])[np.triu_indices(side.size, 1)]
    return differences


def _trim(
    base: np.ndarray,
    head: np.ndarray,
    base_se: np.ndarray | None,
    head_se: np.ndarray | None,
    far: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, tuple[int, int]]:
    """The values (and standard errors) without the rounds ``far`` marks, and how many went."""
    keep_base, keep_head = ~far[0], ~far[1]
    return (
        base[keep_base],
        head[keep_head],
        None if base_se is None else base_se[keep_base],
        None if head_se is None else head_se[keep_head],
        (int(far[0].sum()), int(far[1].sum())),
    )


def _median(values: np.ndarray) -> float | None:
    """The median, or None when there is none or it overflows (values near 1e308)."""
    if not values.size:
        return None
    with np.errstate(all="ignore"):
        median = float(np.median(values))
    return median if math.isfinite(median) else None


def _tests(base: np.ndarray, head: np.ndarray) -> tuple[float, float, float]:
    """p-values of Mann-Whitney U, Kolmogorov-Smirnov and Welch's t on the logarithms (reported;
    the verdict uses the round model)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        p_mwu = scipy_stats.mannwhitneyu(base, head, alternative="two-sided").pvalue
        p_ks = scipy_stats.ks_2samp(base, head).pvalue
        p_t = scipy_stats.ttest_ind(np.log(base), np.log(head), equal_var=False).pvalue
    return _probability(p_mwu), _probability(p_ks), _probability(p_t)


def _probability(p: float) -> float:
    return float(p) if math.isfinite(p) else 1.0
