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

This module judges a whole results file (`decide`, `Comparison`); its parts live by concern:
`estimate` (what one metric's rounds say: outliers, medians, the round model's fit), `verdicts`
(the verdict on one metric: `classify`, `judge`, `MetricJudgement`), `multiplicity` (Holm,
lockstep metrics, the looks of an adaptive run) and `notes` (the words beside the verdicts). The
names other modules import from here are kept here (`__all__`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.core import vocabulary
from bot.core.judge import envdiff, notes, speculation
from bot.core.judge.estimate import (
    DEFAULT_CONFIDENCE,
    OUTLIER_MADS,
    OUTLIER_SHARE,
    SPREAD_ROUNDS,
    TRIM_ROUNDS,
    Estimate,
    estimate,
    outliers,
)
from bot.core.judge.multiplicity import alpha_per_look, family_adjusted, holm, shared_exclusions
from bot.core.judge.results import SIDES, Results
from bot.core.judge.verdicts import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_EFFECT,
    MAX_EXTRA_ROUNDS,
    MIN_ROUNDS,
    Better,
    MetricJudgement,
    Settings,
    Verdict,
    _heading_worse,
    _without_claim,
    classify,
    extra_rounds,
    judge,
    tested_at,
)

# The names the rest of perfbot imports from here, wherever they are defined now.
__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MIN_EFFECT",
    "MAX_EXTRA_ROUNDS",
    "MIN_ROUNDS",
    "OUTLIER_MADS",
    "OUTLIER_SHARE",
    "SPREAD_ROUNDS",
    "TRIM_ROUNDS",
    "VERDICT_ORDER",
    "Better",
    "Comparison",
    "Estimate",
    "MetricJudgement",
    "Settings",
    "Verdict",
    "alpha_per_look",
    "classify",
    "decide",
    "deciding",
    "estimate",
    "extra_rounds",
    "family_adjusted",
    "holm",
    "judge",
    "outliers",
    "overall",
    "shared_exclusions",
    "tested_at",
]

# Order of rows in a report and precedence of the overall verdict.
VERDICT_ORDER = vocabulary.VERDICTS_WORST_FIRST


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
    drifted = notes.drift_warnings(results, ignore_env)
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
        notes=tuple(notes.run_notes(results) + notes.metric_notes(metrics)),
        warnings=tuple(
            drifted + ([notes.WITHHELD_WARNING] if withheld else []) + notes.identical_rounds(values)
        ),
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


def _withholds(environment: Sequence[envdiff.EnvDifference], drifted: bool) -> bool:
    return envdiff.differs(environment) or drifted


def _report_order(m: MetricJudgement) -> tuple[int, bool, float, str]:
    return VERDICT_ORDER.index(m.verdict), not m.primary, -abs(m.change or 0.0), m.name
