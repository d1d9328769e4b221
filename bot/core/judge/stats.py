"""Statistics and verdicts of a base-vs-head comparison: per metric (`judge`) and overall (`decide`).

Method (docs/statistics.md has the reasoning and the calibration):

- Rounds that failed and values that are not finite are left out, and so are far outliers once
  there are `TRIM_ROUNDS` rounds per side: rounds whose log value lies more than 5 robust
  deviations from the median of its *own side*, the deviation (scaled MAD) taken over the residuals
  of both sides, at most 20% of the rounds (`outliers`). Metrics that move in lockstep (``tok_s``
  and the cycle it is derived from) leave out the same rounds.
- The change: the **round model** (`model`): a random-effects model of the log round values with
  the round as the unit of replication, rounds weighted by the spread of their timed calls when
  the runner recorded it; the change is ``exp(head mean - base mean)`` with a t interval and a
  t-test on ``rounds - 2`` degrees of freedom.
- Verdicts, direction-aware (``better``: ``lower`` or ``higher``), from `MIN_ROUNDS` rounds per side:
  ``regression`` / ``improvement``: significant at ``alpha`` AND ``|ratio - 1| >= min_effect``;
  ``unchanged``: the confidence interval lies inside ``(1 - min_effect, 1 + min_effect)`` (an
  equivalence test, TOST);
  ``inconclusive``: neither, with an estimate of the extra rounds per side likely to decide;
  ``error``: no measurement on one side, or a ratio that cannot be formed.
- Roles: a results file declares its metrics **primary** (the verdict is about them; the
  ``headline`` one first) or **diagnostic** (reported, explaining, never deciding). The overall
  verdict follows the primary metrics only. p-values are adjusted with **Holm**'s step-down method
  within each of the two families, which bounds the chance of any false alarm among the primary
  metrics (and, separately, among the diagnostics) by ``alpha``; metrics whose rounds move in
  lockstep (``tok_s`` is a fixed multiple of ``1 / cycle_ms``) are one hypothesis, not two. The
  Kolmogorov-Smirnov test only flags a change of shape, in a note.
- Environment: if base and head ran in materially different environments, or a setting changed
  during the run (`envdiff`), no claim is made: regressions and improvements become
  ``inconclusive``, the overall verdict is ``inconclusive``, and a warning says why.

The core never reads the clock or the environment, and the judgement is deterministic.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from bot.core import vocabulary
from bot.core.judge import envdiff, model, speculation
from bot.core.judge.quantities import number
from bot.core.judge.results import SIDES, Results, Role

Verdict = vocabulary.Verdict
Better = vocabulary.Better

DEFAULT_MIN_EFFECT = vocabulary.MIN_EFFECT
DEFAULT_ALPHA = 0.01
DEFAULT_CONFIDENCE = 0.95
MIN_ROUNDS = 3
TRIM_ROUNDS = 5
MAX_EXTRA_ROUNDS = 1000
OUTLIER_MADS = 5.0
OUTLIER_SHARE = 0.2
# Above this many rounds a side, Shamos' deviation is taken over this many of its rounds, evenly
# spaced in value order (every pair of n rounds takes n x n matrices: 5,000 rounds, ~600 MB a metric).
SPREAD_ROUNDS = 500
# The median |x - y| of two draws of a normal distribution, in standard deviations: sqrt(2) x 0.6745.
_PAIR_TO_SD = math.sqrt(2) * float(scipy_stats.norm.ppf(0.75))
_LOCKSTEP = 1e-9  # log-scale tolerance for two metrics that are fixed transforms of each other

WITHHELD_WARNING = (
    "base and head ran in different environments (see the environment diff): no "
    "regression or improvement is claimed"
)

# Order of rows in a report and precedence of the overall verdict.
VERDICT_ORDER = vocabulary.VERDICTS_WORST_FIRST
_CLAIMS = vocabulary.CLAIMS


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
    def deciding(self) -> tuple[MetricJudgement, ...]:
        """The metrics the overall verdict follows: the primary ones (all, if none is)."""
        return deciding(self.metrics)

    @property
    def extra_rounds(self) -> int | None:
        """Extra rounds per side likely to settle the overall verdict; None when none are needed
        or more rounds cannot help (the environments differ).

        The overall verdict is settled once any deciding metric becomes a regression, or once
        every inconclusive deciding metric is settled: the sooner of the two.
        """
        pending = [m for m in self.deciding if m.extra_rounds is not None]
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
        return {
            "verdict": self.verdict,
            "rounds": dict(self.rounds),
            "metrics": [m.to_dict() for m in self.metrics],
            "environment_diff": [d.to_dict() for d in self.environment],
            "speculation": self.speculation.to_dict() if self.speculation else None,
            "extra_rounds": self.extra_rounds,
            "method": {
                "min_effect": self.settings.min_effect,
                "alpha": self.settings.alpha,
                "looks": self.settings.looks,
                "confidence": self.settings.confidence,
                "min_rounds": MIN_ROUNDS,
                "model": "random-effects on log round values, Knapp-Hartung t",
            },
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }


def deciding(metrics: Sequence[MetricJudgement]) -> tuple[MetricJudgement, ...]:
    """The primary metrics among ``metrics``, or all of them when none is primary."""
    primary = tuple(m for m in metrics if m.primary)
    return primary or tuple(metrics)


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


def alpha_per_look(alpha: float, looks: int) -> float:
    """Significance level for each of ``looks`` planned interim judgements (Bonferroni)."""
    return alpha / max(1, looks)


def decide(
    results: Results,
    min_effect: float = DEFAULT_MIN_EFFECT,
    alpha: float = DEFAULT_ALPHA,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    ignore_env: Iterable[str] = (),
) -> Comparison:
    """Judge every metric of a validated results file and give the overall verdict.

    Overall, over the deciding metrics (the primary ones; all, when the file declares none):
    ``error`` when none could be judged; else ``regression`` if any regressed, else
    ``inconclusive`` if any is, else ``improvement`` if any improved, else ``unchanged``.
    Diagnostics get verdicts of their own, within their own Holm family, and never decide.
    ``ignore_env``: glob patterns of fingerprint keys that may differ.

    An adaptive run (``options.max_rounds`` above ``options.rounds``) could have stopped at any of
    its looks; its verdicts use ``alpha`` divided over those looks (`alpha_per_look`), the same
    level its stopping rule used, so that stopping when the data looked decided does not raise the
    false-alarm rate.
    """
    settings = Settings(min_effect, alpha_per_look(alpha, results.looks), confidence, results.looks)
    names = sorted(results.metrics)
    roles = {n: results.role(n) for n in names}
    values = {n: (results.values("base", n), results.values("head", n)) for n in names}
    excluded = shared_exclusions(values)
    found = {
        n: estimate(
            *values[n],
            confidence=confidence,
            base_se=results.spreads("base", n),
            head_se=results.spreads("head", n),
            exclude=excluded[n],
        )
        for n in names
    }
    primary = [n for n in names if roles[n] != "diagnostic"]
    families = [primary, [n for n in names if n not in primary]]
    judged = []
    for family in families:
        adjusted, hypotheses = family_adjusted(family, found, values)
        judged += [
            classify(
                n,
                results.metrics[n].unit,
                results.metrics[n].better,
                found[n],
                adjusted[n],
                settings,
                family=hypotheses,
                role=roles[n],
                mode=results.metrics[n].mode,
            )
            for n in family
        ]
    ignore_env = tuple(ignore_env)
    environment = envdiff.diff(results.base.fingerprint, results.head.fingerprint, ignore_env)
    drifted = _drift_warnings(results, ignore_env)
    withheld = _withholds(environment, bool(drifted))
    if withheld:  # different environments: keep the numbers, take back every claim of a change
        judged = [_without_claim(m, "the environments differ") for m in judged]
    metrics = tuple(sorted(judged, key=_report_order))
    verdict = overall(m.verdict for m in deciding(metrics))
    if withheld and verdict != "error":
        verdict = "inconclusive"  # not even "unchanged": the machine may mask a change
    return Comparison(
        verdict,
        metrics,
        tuple(environment),
        speculation.judge(
            {m.name: m for m in metrics},
            min_effect,
            _floor(results),
            speculation.speedup_intervals(results, confidence),
        ),
        settings,
        notes=tuple(_run_notes(results) + _metric_notes(metrics)),
        warnings=tuple(drifted + ([WITHHELD_WARNING] if withheld else []) + _identical_rounds(values)),
        rounds={side: len(results.rounds_of(side)) - len(results.failures(side)) for side in SIDES},
        drifted=bool(drifted),
    )


def _floor(results: Results) -> float | None:
    """The configured floor of the speculation speed-up the run recorded, if a usable one."""
    floor = results.options.get(speculation.SPECULATION_FLOOR)
    if not isinstance(floor, int | float) or isinstance(floor, bool):
        return None
    return float(floor) if math.isfinite(floor) and floor > 0 else None


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


def shared_exclusions(
    values: Mapping[str, tuple[Sequence[float], Sequence[float]]],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each metric's far outliers (`outliers`), the same for metrics whose rounds move in lockstep
    (one a fixed multiple of another or of its inverse): a round left out of the cycle is left
    out of the tok/s derived from it, so that the two never tell different stories. A group's
    exclusions are those of every member together."""
    shared: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for group in _groups(values, lambda a, b: _lockstep(values[a], values[b])):
        masks = [outliers(*values[name]) for name in group]
        union = (np.logical_or.reduce([m[0] for m in masks]), np.logical_or.reduce([m[1] for m in masks]))
        shared.update(dict.fromkeys(group, union))
    return shared


def family_adjusted(
    names: Sequence[str],
    found: Mapping[str, Estimate],
    values: Mapping[str, tuple[Sequence[float], Sequence[float]]],
) -> tuple[dict[str, float], int]:
    """Holm-adjusted p-values of one family of metrics, and the number of distinct hypotheses in
    it: metrics whose round values move in lockstep (one is a fixed multiple of the other or of
    its inverse, round by round) and test alike are one hypothesis."""
    groups = _groups(
        names,
        lambda a, b: (
            _lockstep(values[a], values[b]) and math.isclose(found[a].p_value, found[b].p_value, rel_tol=1e-9)
        ),
    )
    adjusted = holm([found[g[0]].p_value for g in groups])
    return {name: p for g, p in zip(groups, adjusted, strict=True) for name in g}, len(groups)


def _groups(names: Iterable[str], same: Callable[[str, str], bool]) -> list[list[str]]:
    """``names`` in groups, in order: each joins the first group whose first member it is ``same``
    as (metrics whose rounds move in lockstep), else starts one."""
    groups: list[list[str]] = []
    for name in names:
        group = next((g for g in groups if same(g[0], name)), None)
        if group is None:
            groups.append([name])
        else:
            group.append(name)
    return groups


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


def _withholds(environment: Sequence[envdiff.EnvDifference], drifted: bool) -> bool:
    return envdiff.differs(environment) or drifted


def _heading_worse(m: MetricJudgement, settings: Settings) -> bool:
    change = m.change or 0.0
    return vocabulary.direction(change, m.better) == "regression" and abs(change) >= settings.min_effect


def _lockstep(a: tuple[Sequence[float], Sequence[float]], b: tuple[Sequence[float], Sequence[float]]) -> bool:
    """Whether two metrics' rounds are fixed transforms of each other: ``log a ± log b`` the same
    in every round of both sides."""
    first, second = (np.concatenate([np.asarray(s, dtype=float) for s in pair]) for pair in (a, b))
    if first.size != second.size or first.size < 2 or first.min() <= 0 or second.min() <= 0:
        return False
    with np.errstate(all="ignore"):
        x, y = np.log(first), np.log(second)
    return any(bool(np.ptp(combined) <= _LOCKSTEP) for combined in (x - y, x + y))


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


def _report_order(m: MetricJudgement) -> tuple[int, bool, float, str]:
    return VERDICT_ORDER.index(m.verdict), not m.primary, -abs(m.change or 0.0), m.name


def _metric_notes(metrics: Sequence[MetricJudgement]) -> list[str]:
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


def _identical_rounds(values: Mapping[str, tuple[Sequence[float], Sequence[float]]]) -> list[str]:
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


def _drift_warnings(results: Results, ignore_env: tuple[str, ...]) -> list[str]:
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
            notes.append(
                f"{len(failed)} of {len(rounds)} {side} rounds failed and "
                f"{'was' if len(failed) == 1 else 'were'} left out "
                f"(first: {first[:200]})"
            )
    return notes
