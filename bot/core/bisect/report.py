"""What `perfbot bisect` measured and found: judging each probe, and the report a maintainer reads.

`conclude` builds the (frozen) report from the planner's last step and the runs made.

Each probe benchmarks GOOD against one commit of the range. The probe is ``bad`` when the chosen
metric regressed against GOOD, ``ok`` when it is unchanged (or better); when the statistics
cannot decide, it is put on the side it is closer to, on a ratio scale: beyond the geometric
midpoint of GOOD (1) and the GOOD..BAD ratio, it counts as bad. A probe with no successful rounds
is ``skipped`` (the commit did not build or run).

The conclusion says what the statistics said: the culprit is **confirmed** only when its run
against its parent is a regression verdict; **likely** when that run leaned towards the
regression without deciding it; otherwise not confirmed. Probes placed by leaning are named in
the notes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.core.bisect.plan import Culprit, GiveUp, Outcome, plain_probes
from bot.core.judge.quantities import percent
from bot.core.judge.stats import Comparison, MetricJudgement
from bot.core.risk.scoring import RiskReport


class BisectError(ValueError):
    """A bisection that cannot go on (no regression to find, metric unknown)."""


@dataclass(frozen=True, slots=True)
class Measurement:
    """One benchmark run of the bisection: ``head`` against ``base``."""

    purpose: str  # reference | probe | confirm
    base: str
    head: str
    outcome: Outcome | None
    verdict: str
    ratio: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    results_path: str
    why: str

    def to_dict(self) -> dict:
        return {"purpose": self.purpose, "base": self.base, "head": self.head,
                "outcome": self.outcome, "verdict": self.verdict, "ratio": self.ratio,
                "ci": list(self.ci) if self.ci else None, "p_value": self.p_value,
                "results": self.results_path, "why": self.why}


@dataclass(frozen=True, slots=True)
class Suspect:
    """A commit of the range, as triage saw it."""

    sha: str
    subject: str
    risk: RiskReport


@dataclass(frozen=True, slots=True)
class BisectReport:
    good: str
    bad: str
    suite: str
    metric: str
    commits: int
    culprit: Suspect | None
    parent: str | None
    measurements: tuple[Measurement, ...]
    plain_probes: int | None
    conclusion: str
    candidates: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def probes(self) -> int:
        return sum(1 for m in self.measurements if m.purpose == "probe")

    @property
    def confirmation(self) -> Measurement | None:
        return next((m for m in self.measurements if m.purpose == "confirm"), None)

    def to_dict(self) -> dict:
        culprit = None
        if self.culprit is not None:
            culprit = {"sha": self.culprit.sha, "subject": self.culprit.subject,
                       "parent": self.parent, "score": self.culprit.risk.score,
                       "level": self.culprit.risk.level, "reasons": self.culprit.risk.reasons,
                       "files": [{"path": f.path, "added": f.added, "removed": f.removed}
                                 for f in self.culprit.risk.files]}
        return {"good": self.good, "bad": self.bad, "suite": self.suite, "metric": self.metric,
                "commits": self.commits, "culprit": culprit, "conclusion": self.conclusion,
                "candidates": list(self.candidates),
                "runs": {"total": len(self.measurements), "probes": self.probes,
                         "plain_bisection_probes": self.plain_probes},
                "measurements": [m.to_dict() for m in self.measurements], "notes": list(self.notes)}


def conclude(step: Culprit | GiveUp, *, good: str, bad: str, suite: str, metric: str,
             commits: Sequence[str], suspects: Mapping[str, Suspect], measurements: Sequence[Measurement],
             confirmation: Measurement | None = None) -> BisectReport:
    """The report of a finished bisection of ``commits`` (GOOD..BAD, oldest first).

    ``step``: the planner's last word; ``measurements``: the reference run and the probes, in
    order; ``confirmation``: a culprit's run against its parent (a `Culprit` needs one).
    """
    notes = tuple(step.notes)
    if isinstance(step, GiveUp):
        return BisectReport(good, bad, suite, metric, len(commits), None, None, tuple(measurements), None,
                            f"no single culprit: {step.reason}", step.candidates, notes)
    culprit, parent = suspects[step.sha], step.parent or good
    if confirmation is None or (confirmation.base, confirmation.head) != (parent, culprit.sha):
        raise ValueError(f"the culprit {culprit.sha[:10]} needs its confirmation against {parent[:10]}")
    runs = (*measurements, confirmation)
    change = percent(confirmation.ratio - 1 if confirmation.ratio is not None else None)
    conclusion = (f"first bad commit {culprit.sha[:10]} ({culprit.subject}): {metric} {change} "
                  f"against its parent, {_confirmed(confirmation)}")
    leaning = [f"{m.purpose} {m.head[:10]} was inconclusive ({percent(m.ratio - 1 if m.ratio else None)}); "
               f"it was counted {m.outcome} by the side it leaned to" for m in runs
               if m.purpose in ("probe", "confirm") and m.verdict == "inconclusive"
               and m.outcome in ("bad", "ok")]
    return BisectReport(good, bad, suite, metric, len(commits), culprit, parent, runs,
                        plain_probes(len(commits), list(commits).index(culprit.sha)), conclusion,
                        notes=notes + tuple(leaning))


def _confirmed(confirmation: Measurement) -> str:
    """What the culprit's run against its parent established, in words that claim no more."""
    if confirmation.verdict == "regression":
        return "confirmed"
    if confirmation.outcome == "bad":
        return ("likely, not confirmed: the run against its parent leaned towards the regression "
                "but did not decide it (more rounds would)")
    return "NOT confirmed against its parent"


def probe_as_confirmation(measurements: Sequence[Measurement], parent: str,
                          culprit: str) -> Measurement | None:
    """The culprit's confirmation taken from a probe that already measured it against ``parent``
    (GOOD is the parent of the range's first commit); None when it must be measured."""
    probe = next((m for m in measurements
                  if m.purpose == "probe" and (m.base, m.head) == (parent, culprit)), None)
    if probe is None:
        return None
    return Measurement("confirm", parent, culprit, probe.outcome, probe.verdict, probe.ratio, probe.ci,
                       probe.p_value, probe.results_path, f"{probe.why} (the probe above)")


def regressed_metric(reference: Comparison, wanted: str | None) -> MetricJudgement:
    """The metric to bisect on: ``wanted``, or the one that regressed most from GOOD to BAD."""
    by_name = {m.name: m for m in reference.metrics}
    if wanted is not None:
        return named_metric_regressed(by_name.get(wanted), wanted, sorted(by_name))
    regressions = [m for m in reference.metrics if m.verdict == "regression"]
    if not regressions:
        raise BisectError(f"BAD is not measurably slower than GOOD on any metric "
                          f"({_summary(reference)}): nothing to bisect")
    return max(regressions, key=lambda m: abs(m.change or 0.0))


def named_metric_regressed(judged: MetricJudgement | None, name: str,
                           measured: list[str] | None = None) -> MetricJudgement:
    """``judged`` (the reference run's judgement of metric ``name``), if it regressed."""
    if judged is None:
        known = f" (it measures: {', '.join(measured)})" if measured else ""
        raise BisectError(f"metric '{name}' is not measured by this suite{known}")
    if judged.verdict != "regression":
        raise BisectError(f"{name} did not regress from GOOD to BAD ({judged.verdict}, "
                          f"{percent(judged.change)}): nothing to bisect")
    return judged


def judge_probe(probe: MetricJudgement | None, reference: MetricJudgement,
                against: str = "GOOD") -> tuple[Outcome, str]:
    """``bad`` / ``ok`` / ``skipped`` for a probe measured against ``against``, and why."""
    if probe is None or probe.verdict == "error" or probe.ratio is None:
        return "skipped", "no successful rounds (the commit did not build or run)"
    if probe.verdict == "regression":
        return "bad", f"regressed {percent(probe.change)} against {against}"
    if probe.verdict in ("unchanged", "improvement"):
        return "ok", f"{probe.verdict} against {against} ({percent(probe.change)})"
    # Undecided: the side it is nearer to, on a ratio scale (GOOD at 1, BAD at the reference's).
    halfway = math.sqrt(reference.ratio) if reference.ratio and reference.ratio > 0 else 1.0
    worse = probe.ratio >= halfway if halfway >= 1 else probe.ratio <= halfway
    side = "bad" if worse else "ok"
    return side, (f"inconclusive ({percent(probe.change)}); nearer the "
                  f"{'regressed' if worse else 'good'} side of {percent(reference.change)}")


def measurement(purpose: str, base: str, head: str, judged: MetricJudgement | None,
                outcome: Outcome | None, why: str, path: str) -> Measurement:
    ci = judged.estimate.ci if judged is not None else None
    return Measurement(purpose, base, head, outcome, judged.verdict if judged else "error",
                       judged.ratio if judged else None, tuple(ci) if ci else None,
                       judged.p_value if judged else None, path, why)


def _summary(comparison: Comparison) -> str:
    return ", ".join(f"{m.name} {m.verdict} {percent(m.change)}" for m in comparison.metrics[:4])
