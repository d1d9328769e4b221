"""Statistics and verdicts of a base-vs-head comparison: per metric (`judge`) and overall (`decide`).

Method (docs/statistics.md has the reasoning and the calibration):

- Rounds that failed and values that are not finite are left out, and so are far outliers:
  rounds more than 5 robust deviations (scaled MAD) from the median of both sides pooled, at most
  20% of the rounds (`_trim`). The location is the **median**, the change is the ratio of medians
  ``head / base`` with a percentile **bootstrap** confidence interval (`scipy.stats.bootstrap`,
  resampling each side independently, seeded by the caller).
- Significance: the **Mann-Whitney U** rank test (two-sided, robust to outliers and odd shapes)
  and **Welch's t-test on the logarithms** (which can decide from 5 rounds, where an exact rank
  test cannot go below p = 0.008), Bonferroni-combined: ``p = min(1, 2 * min(p_mwu, p_t))``, so
  taking the better of the two keeps the false-alarm rate. The two-sample **Kolmogorov-Smirnov**
  test is computed too, but only flags a change of shape (a bimodal head, more spread) that the
  medians do not show: a shape change alone is not a regression of the median.
- Verdicts, direction-aware (``better``: ``lower`` or ``higher``):
  ``regression`` / ``improvement``: significant at ``alpha`` AND ``|ratio - 1| >= min_effect``;
  ``unchanged``: the confidence interval lies inside ``(1 - min_effect, 1 + min_effect)``;
  ``inconclusive``: neither, with an estimate of the extra rounds per side likely to decide;
  ``error``: no measurement on one side, or a ratio that cannot be formed.
  Nothing but ``inconclusive`` or ``error`` is said with fewer than `MIN_ROUNDS` rounds per side.
- Several metrics: p-values are adjusted with **Holm**'s step-down method, which bounds the chance
  of any false alarm across all metrics of a comparison by ``alpha``, whatever their correlation.
- Environment: if base and head ran in materially different environments, or a setting changed
  during the run (`envdiff`), no claim is made: regressions and improvements become
  ``inconclusive``, the overall verdict is ``inconclusive``, and a warning says why.

The core never reads the clock or the environment: randomness comes only from ``seed``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import stats as scipy_stats

from bot.core.judge import envdiff, speculation
from bot.core.judge.results import SIDES, Results

Verdict = Literal["regression", "improvement", "unchanged", "inconclusive", "error"]
Better = Literal["lower", "higher"]

DEFAULT_MIN_EFFECT = 0.02
DEFAULT_ALPHA = 0.01
DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 2000
MIN_ROUNDS = 5
MAX_EXTRA_ROUNDS = 1000
OUTLIER_MADS = 5.0
OUTLIER_SHARE = 0.2

WITHHELD_WARNING = ("base and head ran in different environments (see the environment diff): no "
                    "regression or improvement is claimed")

# Order of rows in a report and precedence of the overall verdict.
VERDICT_ORDER: tuple[Verdict, ...] = ("regression", "error", "inconclusive", "improvement", "unchanged")


@dataclass(frozen=True, slots=True)
class Estimate:
    """What the data say about one metric, before any verdict."""

    base_n: int
    head_n: int
    base_median: float | None
    head_median: float | None
    ratio: float | None
    ci: tuple[float, float] | None
    p_mwu: float
    p_ks: float
    problem: str | None = None
    outliers: tuple[int, int] = (0, 0)
    p_t: float = 1.0

    @property
    def p_value(self) -> float:
        """The p-value the verdict uses: the better of Mann-Whitney U and Welch's t on the
        logarithms, Bonferroni-combined so that taking the better one keeps the error rate."""
        return min(1.0, 2 * min(self.p_mwu, self.p_t))

    @property
    def rounds(self) -> int:
        return min(self.base_n, self.head_n)


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

    @property
    def base_median(self) -> float | None:
        return self.estimate.base_median

    @property
    def head_median(self) -> float | None:
        return self.estimate.head_median

    @property
    def ratio(self) -> float | None:
        return self.estimate.ratio

    @property
    def change(self) -> float | None:
        """Relative change of the median, head vs base (+0.53 = 53% higher)."""
        return None if self.estimate.ratio is None else self.estimate.ratio - 1

    def to_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {"name": self.name, "unit": self.unit, "better": self.better,
                "base_median": e.base_median, "head_median": e.head_median, "ratio": e.ratio,
                "ci": list(e.ci) if e.ci else None, "p_value": self.p_value,
                "p_value_unadjusted": e.p_value, "verdict": self.verdict, "reason": self.reason,
                "p_values": {"mann_whitney": e.p_mwu, "welch_log": e.p_t, "ks": e.p_ks},
                "shape_changed": self.shape_changed,
                "rounds": {"base": e.base_n, "head": e.head_n},
                "outliers": {"base": e.outliers[0], "head": e.outliers[1]},
                "extra_rounds": self.extra_rounds}


@dataclass(frozen=True, slots=True)
class Settings:
    """How a comparison was judged. ``alpha`` is the level the verdicts used: the requested one
    divided over the ``looks`` of an adaptive run."""

    min_effect: float = DEFAULT_MIN_EFFECT
    alpha: float = DEFAULT_ALPHA
    confidence: float = DEFAULT_CONFIDENCE
    seed: int = 0
    n_resamples: int = DEFAULT_RESAMPLES
    looks: int = 1


@dataclass(frozen=True, slots=True)
class Comparison:
    """The judgement of a whole results file, as `decide` builds it."""

    verdict: Verdict
    metrics: tuple[MetricJudgement, ...]  # in report order: worst verdict, then largest change first
    environment: tuple[envdiff.EnvDifference, ...]
    speculation: speculation.SpeculationJudgement | None
    settings: Settings
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    rounds: Mapping[str, int] = field(default_factory=dict)  # successful rounds per side
    drifted: bool = False  # a setting that counts changed during a side's run

    @property
    def environment_differs(self) -> bool:
        """Base and head ran in different environments: more rounds will not help."""
        return envdiff.differs(self.environment)

    @property
    def extra_rounds(self) -> int | None:
        """Extra rounds per side likely to settle the overall verdict; None when none are needed
        or more rounds cannot help (the environments differ).

        The overall verdict is settled once any metric becomes a regression, or once every
        inconclusive metric is settled: the sooner of the two.
        """
        pending = [m for m in self.metrics if m.extra_rounds is not None]
        if not pending or self.withheld:
            return None
        settle_all = max(m.extra_rounds or 0 for m in pending)
        heading_worse = [m.extra_rounds or 0 for m in pending if _heading_worse(m, self.settings)]
        return min([settle_all, *heading_worse])

    @property
    def withheld(self) -> bool:
        """No claim is made because the environment differed by side or changed during the run."""
        return _withholds(self.environment, self.drifted)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "rounds": dict(self.rounds),
                "metrics": [m.to_dict() for m in self.metrics],
                "environment_diff": [d.to_dict() for d in self.environment],
                "speculation": self.speculation.to_dict() if self.speculation else None,
                "extra_rounds": self.extra_rounds,
                "method": {"min_effect": self.settings.min_effect, "alpha": self.settings.alpha,
                           "looks": self.settings.looks, "confidence": self.settings.confidence,
                           "seed": self.settings.seed},
                "notes": list(self.notes), "warnings": list(self.warnings)}


def _withholds(environment: Sequence[envdiff.EnvDifference], drifted: bool) -> bool:
    return envdiff.differs(environment) or drifted


def _heading_worse(m: MetricJudgement, settings: Settings) -> bool:
    change = m.change or 0.0
    worse = change > 0 if m.better == "lower" else change < 0
    return worse and abs(change) >= settings.min_effect


def judge(base: Sequence[float], head: Sequence[float], better: Better = "lower",
          min_effect: float = DEFAULT_MIN_EFFECT, alpha: float = DEFAULT_ALPHA, seed: int = 0,
          *, name: str = "metric", unit: str = "", confidence: float = DEFAULT_CONFIDENCE,
          n_resamples: int = DEFAULT_RESAMPLES) -> MetricJudgement:
    """Judge one metric from the per-round values of each side; never raises on any floats.

    This is the rule `perfbot bench run` uses to decide whether to run more rounds: keep going
    while the verdict is ``inconclusive`` and ``extra_rounds`` is not None, up to the run's cap.
    When looking after every few rounds, divide ``alpha`` by the number of looks planned
    (`alpha_per_look`) so that peeking does not raise the false-alarm rate. Judging several
    metrics of one run: use `decide` on the results file (Holm across metrics), or divide
    ``alpha`` by the number of metrics; `min_rounds` says where a run should start.

    ``better``: ``"lower"`` (times) or ``"higher"`` (throughput). ``min_effect``: smallest
    relative change worth reporting (0.02 = 2%). ``seed``: seeds the bootstrap; same inputs and
    seed give the same judgement.
    """
    settings = Settings(min_effect, alpha, confidence, seed, n_resamples)
    found = estimate(base, head, confidence=confidence, seed=seed, n_resamples=n_resamples)
    return classify(name, unit, better, found, found.p_value, settings, family=1)


def alpha_per_look(alpha: float, looks: int) -> float:
    """Significance level for each of ``looks`` planned interim judgements (Bonferroni)."""
    return alpha / max(1, looks)


def decide(results: Results, min_effect: float = DEFAULT_MIN_EFFECT, alpha: float = DEFAULT_ALPHA,
           seed: int = 0, *, confidence: float = DEFAULT_CONFIDENCE,
           n_resamples: int = DEFAULT_RESAMPLES, ignore_env: Iterable[str] = ()) -> Comparison:
    """Judge every metric of a validated results file and give the overall verdict.

    Overall: ``error`` when no metric could be judged; else ``regression`` if any metric
    regressed, else ``inconclusive`` if any is, else ``improvement`` if any improved, else
    ``unchanged``. ``ignore_env``: glob patterns of fingerprint keys that may differ.

    An adaptive run (``options.max_rounds`` above ``options.rounds``) could have stopped at any of
    its looks; its verdicts use ``alpha`` divided over those looks (`alpha_per_look`), the same
    level its stopping rule used, so that stopping when the data looked decided does not raise the
    false-alarm rate.
    """
    settings = Settings(min_effect, alpha_per_look(alpha, results.looks), confidence, seed,
                        n_resamples, results.looks)
    names = sorted(results.metrics)
    found = [estimate(results.values("base", n), results.values("head", n), confidence=confidence,
                      seed=(seed, index), n_resamples=n_resamples) for index, n in enumerate(names)]
    adjusted = holm([f.p_value for f in found])
    judged = [classify(n, results.metrics[n].unit, results.metrics[n].better, f, p, settings,
                       family=len(names)) for n, f, p in zip(names, found, adjusted, strict=True)]
    ignore_env = tuple(ignore_env)
    environment = envdiff.diff(results.base.fingerprint, results.head.fingerprint, ignore_env)
    drifted = _drift_warnings(results, ignore_env)
    withheld = _withholds(environment, bool(drifted))
    if withheld:  # different environments: keep the numbers, take back every claim of a change
        judged = [_without_claim(m) for m in judged]
    metrics = tuple(sorted(judged, key=_report_order))
    verdict = overall(m.verdict for m in metrics)
    if withheld and verdict != "error":
        verdict = "inconclusive"  # not even "unchanged": the machine may mask a change
    return Comparison(
        verdict, metrics, tuple(environment),
        speculation.judge({m.name: m for m in metrics}, min_effect), settings,
        notes=tuple(_run_notes(results) + _metric_notes(metrics)),
        warnings=tuple(drifted + ([WITHHELD_WARNING] if withheld else [])),
        rounds={side: len(results.rounds_of(side)) - len(results.failures(side)) for side in SIDES},
        drifted=bool(drifted))


def overall(verdicts: Iterable[Verdict]) -> Verdict:
    seen = set(verdicts)
    if not seen or seen == {"error"}:
        return "error"
    return next(v for v in VERDICT_ORDER if v in seen and v != "error")


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values: reject where adjusted <= alpha, family-wise error <= alpha."""
    count = len(p_values)
    adjusted = [1.0] * count
    running = 0.0
    for rank, index in enumerate(sorted(range(count), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (count - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def estimate(base: Sequence[float], head: Sequence[float], *, confidence: float = DEFAULT_CONFIDENCE,
             seed: int | tuple[int, ...] = 0, n_resamples: int = DEFAULT_RESAMPLES) -> Estimate:
    """Medians, ratio, bootstrap interval and test p-values of two samples; never raises."""
    b, h, outliers = _trim(_finite(base), _finite(head))
    if not b.size or not h.size:
        side = "base" if not b.size else "head"
        return Estimate(b.size, h.size, _median(b), _median(h), None, None, 1.0, 1.0,
                        f"no successful measurement on the {side} side")
    base_median, head_median = _median(b), _median(h)
    if base_median is None or head_median is None:
        return Estimate(b.size, h.size, base_median, head_median, None, None, 1.0, 1.0,
                        "values too large to compare")
    with np.errstate(all="ignore"):
        ratio = head_median / base_median if base_median > 0 else math.nan
    if not math.isfinite(ratio):
        return Estimate(b.size, h.size, base_median, head_median, None, None, 1.0, 1.0,
                        "the base median is not a positive number: no ratio can be formed")
    if min(b.size, h.size) < 2:
        return Estimate(b.size, h.size, base_median, head_median, ratio, None, 1.0, 1.0)
    p_mwu, p_ks, p_t = _tests(b, h)
    ci = _bootstrap_ratio(b, h, ratio, confidence, seed, n_resamples)
    return Estimate(b.size, h.size, base_median, head_median, ratio, ci, p_mwu, p_ks,
                    outliers=outliers, p_t=p_t)


def classify(name: str, unit: str, better: Better, found: Estimate, p_value: float,
             settings: Settings, family: int = 1) -> MetricJudgement:
    """The verdict for one metric, given its (possibly multiplicity-adjusted) p-value."""
    def verdict(kind: Verdict, reason: str, extra: int | None = None) -> MetricJudgement:
        shape = kind in ("unchanged", "inconclusive") and found.p_ks <= settings.alpha / family
        return MetricJudgement(name, unit, better, found, p_value, kind, reason, extra, shape)

    if found.problem or found.ratio is None:
        return verdict("error", found.problem or "no ratio")
    m, change = settings.min_effect, found.ratio - 1
    enough = found.rounds >= MIN_ROUNDS
    if enough and p_value <= settings.alpha and abs(change) >= m:
        worse = change > 0 if better == "lower" else change < 0
        kind: Verdict = "regression" if worse else "improvement"
        return verdict(kind, f"significant (p={p_value:.2g}) and {abs(change):.1%} >= {m:.1%}")
    if enough and found.ci and 1 - m < found.ci[0] and found.ci[1] < 1 + m:
        return verdict("unchanged", f"the {settings.confidence:.0%} interval lies within ±{m:.1%}")
    extra = extra_rounds(found, m, settings.alpha / family, settings.confidence)
    if not enough:
        return verdict("inconclusive", f"fewer than {MIN_ROUNDS} successful rounds per side", extra)
    return verdict("inconclusive", f"not significant at this size (p={p_value:.2g}) and the "
                   f"interval reaches beyond ±{m:.1%}", extra)


def extra_rounds(found: Estimate, min_effect: float, alpha: float, confidence: float) -> int:
    """Rounds per side to add so that the interval likely settles the verdict either way.

    The interval narrows as 1/sqrt(rounds). With a change of at least ``min_effect`` it must
    shrink below the change (significance, at the stricter ``alpha``); with a smaller change it
    must fit inside the ±``min_effect`` band. At least enough rounds for the exact rank test to
    be able to reach ``alpha`` at all.
    """
    have = found.rounds
    floor = MIN_ROUNDS - have
    if found.ci is None or found.ratio is None:
        return max(1, floor)
    half = (found.ci[1] - found.ci[0]) / 2
    change = abs(found.ratio - 1)
    if change >= min_effect:
        half *= _z(alpha) / _z(1 - confidence)
        target = change
    else:
        target = min_effect - change
    scale = half / target if target > 0 else math.inf
    if not math.isfinite(scale) or scale > MAX_EXTRA_ROUNDS:
        return MAX_EXTRA_ROUNDS
    extra = math.ceil(have * scale * scale) - have
    return int(min(MAX_EXTRA_ROUNDS, max(1, floor, extra)))


def min_rounds(metrics: int = 1, alpha: float = DEFAULT_ALPHA) -> int:
    """Rounds per side from which the rank test alone can call a change among ``metrics``
    metrics (Holm's strictest level): a sensible minimum for `perfbot bench run`.

    Welch's t can decide from `MIN_ROUNDS` when a change is large and the rounds are quiet; the
    rank test, robust to outliers, needs this many however clear the change.
    """
    return max(MIN_ROUNDS, _rounds_for_significance(alpha / max(1, metrics)))


def _rounds_for_significance(alpha: float) -> int:
    """Smallest equal round count at which the exact Mann-Whitney test, Bonferroni-halved, can
    reach ``alpha``."""
    n = 1
    while 2 * 2 / math.comb(2 * n, n) > alpha and n < MAX_EXTRA_ROUNDS:
        n += 1
    return n


def _z(alpha: float) -> float:
    return float(scipy_stats.norm.ppf(1 - alpha / 2))


def _finite(values: Sequence[float]) -> np.ndarray:
    numbers = []
    for value in values:
        try:
            numbers.append(float(value))
        except (TypeError, ValueError, OverflowError):
            continue
    array = np.asarray(numbers, dtype=float)
    return array[np.isfinite(array)]


def _trim(base: np.ndarray, head: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """Leave out far outliers: rounds more than `OUTLIER_MADS` robust standard deviations (scaled
    MAD) from the median of both sides pooled, unless that would drop more than `OUTLIER_SHARE`
    of the rounds.

    The rule looks only at the pooled values, never at which side a value came from, so when
    nothing changed every labelling of the kept rounds stays equally likely and the rank test's
    false-alarm rate holds. (Trimming each side by its own median does not: it doubled the
    false alarms on bimodal rounds in the calibration.)
    """
    pooled = np.concatenate([base, head])
    if min(base.size, head.size) < MIN_ROUNDS:
        return base, head, (0, 0)
    with np.errstate(all="ignore"):
        center = np.median(pooled)
        spread = 1.4826 * np.median(np.abs(pooled - center))
        keep_base = np.abs(base - center) <= OUTLIER_MADS * spread
        keep_head = np.abs(head - center) <= OUTLIER_MADS * spread
    dropped = (int(base.size - keep_base.sum()), int(head.size - keep_head.sum()))
    if not math.isfinite(spread) or spread == 0 or sum(dropped) > OUTLIER_SHARE * pooled.size:
        return base, head, (0, 0)
    return base[keep_base], head[keep_head], dropped


def _median(values: np.ndarray) -> float | None:
    """The median, or None when there is none or it overflows (values near 1e308)."""
    if not values.size:
        return None
    with np.errstate(all="ignore"):
        median = float(np.median(values))
    return median if math.isfinite(median) else None


def _tests(base: np.ndarray, head: np.ndarray) -> tuple[float, float, float]:
    """p-values of Mann-Whitney U, Kolmogorov-Smirnov and Welch's t on the logarithms."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        p_mwu = scipy_stats.mannwhitneyu(base, head, alternative="two-sided").pvalue
        p_ks = scipy_stats.ks_2samp(base, head).pvalue
        positive = base.min() > 0 and head.min() > 0
        p_t = scipy_stats.ttest_ind(np.log(base), np.log(head), equal_var=False).pvalue \
            if positive else 1.0
    return _probability(p_mwu), _probability(p_ks), _probability(p_t)


def _probability(p: float) -> float:
    return float(p) if math.isfinite(p) else 1.0


def _bootstrap_ratio(base: np.ndarray, head: np.ndarray, ratio: float, confidence: float,
                     seed: int | tuple[int, ...], n_resamples: int) -> tuple[float, float] | None:
    if np.ptp(base) == 0 and np.ptp(head) == 0:
        return ratio, ratio

    def median_ratio(b: np.ndarray, h: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(h, axis=axis) / np.median(b, axis=axis)

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = scipy_stats.bootstrap((base, head), median_ratio, vectorized=True,
                                       n_resamples=n_resamples, confidence_level=confidence,
                                       method="percentile", rng=np.random.default_rng(seed))
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


def _without_claim(m: MetricJudgement) -> MetricJudgement:
    if m.verdict not in ("regression", "improvement"):
        return m
    return dataclasses.replace(m, verdict="inconclusive", extra_rounds=None,
                               reason=f"would be a {m.verdict}, but the environments differ")


def _report_order(m: MetricJudgement) -> tuple[int, float, str]:
    return VERDICT_ORDER.index(m.verdict), -abs(m.change or 0.0), m.name


def _metric_notes(metrics: Sequence[MetricJudgement]) -> list[str]:
    notes = [f"{m.name}: the head rounds are spread differently from the base rounds "
             f"(Kolmogorov-Smirnov p={m.estimate.p_ks:.2g}) although the median did not move "
             "measurably; look at the per-round values" for m in metrics if m.shape_changed]
    for m in metrics:
        base, head = m.estimate.outliers
        if base or head:
            notes.append(f"{m.name}: {base} base and {head} head rounds were far outliers "
                         f"(over {OUTLIER_MADS:g} robust deviations from the median) and were left out")
    return notes


def _drift_warnings(results: Results, ignore_env: tuple[str, ...]) -> list[str]:
    warnings_ = []
    for side in SIDES:
        changed = [d for d in envdiff.drift(results.revision(side).fingerprint, ignore_env)
                   if d.material]
        if changed:
            first = changed[0]
            more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
            warnings_.append(f"the {side} environment changed during the run: {first.key} "
                             f"{first.base} -> {first.head}{more}")
    return warnings_


def _run_notes(results: Results) -> list[str]:
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
            notes.append(f"{len(failed)} of {len(rounds)} {side} rounds failed and were left out "
                         f"(first: {first[:200]})")
    return notes
