"""What `perfbot bisect` measured and found: judging each probe, and the report a maintainer reads.

`conclude` builds the (frozen) report from the planner's last step and the runs made.

Each probe benchmarks GOOD against one commit of the range and asks whether that commit carries
the regression found from GOOD to BAD. The dividing line is the geometric midpoint of GOOD (a
ratio of 1) and the GOOD..BAD ratio: a probe is ``bad`` when the chosen metric regressed against
GOOD *and* reached that midpoint, ``ok`` when it is unchanged or better. A regression short of
the midpoint is counted ``ok`` and named in the notes: its commit is nearer GOOD than BAD (a
regression in steps, or two sides of a noise floor landing in different modes), and a probe that
blamed it would send the search to the wrong side. When the statistics cannot decide, the probe
is put on the side of the midpoint it lies on. A probe with no successful rounds is ``skipped``
(the commit did not build or run).

The conclusion says what the statistics said: the culprit is **confirmed** only when its own run
against its parent is a regression verdict that reaches the midpoint (the outcome ``bad``);
**likely** when that run leaned towards the regression without deciding it; otherwise not
confirmed. Measurements placed by leaning are named in the notes.

Every report has a `status` (`STATUSES`), the one word a reader acts on: ``confirmed``, ``likely``
or ``not_confirmed`` for a culprit (or, without one, candidates that could not be told apart);
``not_reproduced`` when GOOD and BAD, measured again now, no longer differ on the metric
(`not_reproduced`: no culprit, the reference run and both sides' environment fingerprints kept, so
that a reader can set them beside those of the runs that first saw the regression); ``error`` when
the reference run measured nothing usable (`unusable`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, get_args

from bot.core.bisect.plan import Culprit, GiveUp, Outcome, plain_probes
from bot.core.judge.envdiff import AFTER_KEYS, flatten
from bot.core.judge.quantities import percent
from bot.core.judge.stats import Comparison, MetricJudgement
from bot.core.risk.scoring import RiskReport
from bot.core.text import clip

SCHEMA = 1
Status = Literal["confirmed", "likely", "not_confirmed", "not_reproduced", "error"]
STATUSES: tuple[Status, ...] = get_args(Status)
# The name the reference run's results file has in an artifact (`perfbot bisect --artifact`).
REFERENCE_RESULTS = "reference.results.json"
CONFIRM_RESULTS = "confirm.results.json"
MAX_FINGERPRINT_KEY, MAX_FINGERPRINT_VALUE = 300, 2000  # characters of a flattened fingerprint's entry


class BisectError(ValueError):
    """A bisection that cannot go on (metric unknown, output folder of another bisection)."""


class NotReproduced(BisectError):
    """GOOD and BAD, measured now, do not differ on the metric: there is no regression to find.

    ``judged``: the reference run's judgement of the metric it would have bisected on (None when
    the run measured no metric at all)."""

    def __init__(self, message: str, judged: MetricJudgement | None):
        super().__init__(message)
        self.judged = judged


class MeasurementDict(TypedDict):
    """A `Measurement` as JSON (`perfbot bisect --format json`)."""

    purpose: str
    base: str
    head: str
    outcome: Outcome | None
    verdict: str
    ratio: float | None
    ci: list[float] | None
    p_value: float | None
    results: str
    why: str


class CulpritFileDict(TypedDict):
    path: str
    added: int
    removed: int


class CulpritDict(TypedDict):
    """The first bad commit, its parent and its risk, as JSON."""

    sha: str
    subject: str
    parent: str | None
    score: int
    level: str
    reasons: list[str]
    files: list[CulpritFileDict]


class RunsDict(TypedDict):
    """How many benchmark runs the bisection made, and how many plain halving would have."""

    total: int
    probes: int
    rechecks: int
    plain_bisection_probes: int | None


class ReferenceDict(TypedDict):
    """The reference run (GOOD against BAD, measured in this bisection) on the metric, as JSON."""

    verdict: str
    ratio: float | None
    ci: list[float] | None
    results: str


class FingerprintsDict(TypedDict):
    """Each side's environment fingerprint as the reference run recorded it, flattened to dotted
    keys (``gpu.0.name``) with text values."""

    good: dict[str, str]
    bad: dict[str, str]


class BisectReportDict(TypedDict):
    """A `BisectReport` as JSON (``schema`` 1)."""

    schema: int
    status: Status
    reference: ReferenceDict | None
    fingerprints: FingerprintsDict
    good: str
    bad: str
    suite: str
    metric: str
    commits: int
    culprit: CulpritDict | None
    conclusion: str
    candidates: list[str]
    runs: RunsDict
    measurements: list[MeasurementDict]
    notes: list[str]


@dataclass(frozen=True, slots=True)
class Measurement:
    """One benchmark run of the bisection: ``head`` against ``base``."""

    purpose: str  # reference | probe | confirm | recheck
    base: str
    head: str
    outcome: Outcome | None
    verdict: str
    ratio: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    results_path: str
    why: str

    def to_dict(self) -> MeasurementDict:
        return {
            "purpose": self.purpose,
            "base": self.base,
            "head": self.head,
            "outcome": self.outcome,
            "verdict": self.verdict,
            "ratio": self.ratio,
            "ci": list(self.ci) if self.ci else None,
            "p_value": self.p_value,
            "results": self.results_path,
            "why": self.why,
        }


@dataclass(frozen=True, slots=True)
class Suspect:
    """A commit of the range, as triage saw it."""

    sha: str
    subject: str
    risk: RiskReport


@dataclass(frozen=True, slots=True, kw_only=True)
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
    fingerprints: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # "good"/"bad"
    outcome: Status | None = None  # set for not_reproduced and error; else from the confirmation

    @property
    def status(self) -> Status:
        if self.outcome is not None:
            return self.outcome
        confirmation = self.confirmation
        if self.culprit is None or confirmation is None:
            return "not_confirmed"
        if confirmation.outcome == "bad":
            return "confirmed" if confirmation.verdict == "regression" else "likely"
        return "not_confirmed"

    @property
    def reference(self) -> Measurement | None:
        return next((m for m in self.measurements if m.purpose == "reference"), None)

    @property
    def probes(self) -> int:
        return sum(1 for m in self.measurements if m.purpose == "probe")

    @property
    def rechecks(self) -> int:
        """Runs made again because a confirmation contradicted the probes (`RECHECK`)."""
        return sum(1 for m in self.measurements if m.purpose == "recheck")

    @property
    def confirmation(self) -> Measurement | None:
        """The culprit's run against its parent: the last one, when an earlier culprit's
        confirmation contradicted its probes and the search went on."""
        return next((m for m in reversed(self.measurements) if m.purpose == "confirm"), None)

    def to_dict(self) -> BisectReportDict:
        culprit: CulpritDict | None = None
        if self.culprit is not None:
            culprit = {
                "sha": self.culprit.sha,
                "subject": self.culprit.subject,
                "parent": self.parent,
                "score": self.culprit.risk.score,
                "level": self.culprit.risk.level,
                "reasons": self.culprit.risk.reasons,
                "files": [
                    {"path": f.path, "added": f.added, "removed": f.removed} for f in self.culprit.risk.files
                ],
            }
        reference = self.reference
        return {
            "schema": SCHEMA,
            "status": self.status,
            "reference": None
            if reference is None
            else {
                "verdict": reference.verdict,
                "ratio": reference.ratio,
                "ci": list(reference.ci) if reference.ci else None,
                "results": reference.results_path,
            },
            "fingerprints": {
                "good": dict(self.fingerprints.get("good", {})),
                "bad": dict(self.fingerprints.get("bad", {})),
            },
            "good": self.good,
            "bad": self.bad,
            "suite": self.suite,
            "metric": self.metric,
            "commits": self.commits,
            "culprit": culprit,
            "conclusion": self.conclusion,
            "candidates": list(self.candidates),
            "runs": {
                "total": len(self.measurements),
                "probes": self.probes,
                "rechecks": self.rechecks,
                "plain_bisection_probes": self.plain_probes,
            },
            "measurements": [m.to_dict() for m in self.measurements],
            "notes": list(self.notes),
        }


def conclude(
    step: Culprit | GiveUp,
    *,
    good: str,
    bad: str,
    suite: str,
    metric: str,
    commits: Sequence[str],
    suspects: Mapping[str, Suspect],
    measurements: Sequence[Measurement],
    confirmation: Measurement | None = None,
    fingerprints: Mapping[str, Mapping[str, str]] | None = None,
) -> BisectReport:
    """The report of a finished bisection of ``commits`` (GOOD..BAD, oldest first).

    ``step``: the planner's last word; ``measurements``: the reference run and the probes, in
    order; ``confirmation``: a culprit's run against its parent (a `Culprit` needs one).
    """
    notes = tuple(step.notes)
    if isinstance(step, GiveUp):
        return BisectReport(
            good=good,
            bad=bad,
            suite=suite,
            metric=metric,
            commits=len(commits),
            culprit=None,
            parent=None,
            measurements=tuple(measurements),
            plain_probes=None,
            conclusion=f"no single culprit: {step.reason}",
            candidates=step.candidates,
            notes=notes,
            fingerprints=fingerprints or {},
        )
    culprit, parent = suspects[step.sha], step.parent or good
    if confirmation is None or (confirmation.base, confirmation.head) != (parent, culprit.sha):
        raise ValueError(f"the culprit {culprit.sha[:10]} needs its confirmation against {parent[:10]}")
    runs = (*measurements, confirmation)
    change = percent(confirmation.ratio - 1 if confirmation.ratio is not None else None)
    conclusion = (
        f"first bad commit {culprit.sha[:10]} ({culprit.subject}): {metric} {change} "
        f"against its parent, {_confirmed(confirmation)}"
    )
    return BisectReport(
        good=good,
        bad=bad,
        suite=suite,
        metric=metric,
        commits=len(commits),
        culprit=culprit,
        parent=parent,
        measurements=runs,
        plain_probes=plain_probes(len(commits), list(commits).index(culprit.sha)),
        conclusion=conclusion,
        notes=notes + tuple(_leaning(runs)),
        fingerprints=fingerprints or {},
    )


def not_reproduced(
    reference: Measurement,
    *,
    suite: str,
    metric: str,
    commits: int,
    fingerprints: Mapping[str, Mapping[str, str]],
) -> BisectReport:
    """The report of a range whose GOOD and BAD, measured now, do not differ on ``metric`` (or
    differ without the runs deciding it: an inconclusive reference is said to be one, never called
    unchanged): no culprit; ``reference`` (GOOD against BAD) and each side's fingerprint are kept."""
    change = percent(reference.ratio - 1 if reference.ratio is not None else None)
    measured = f"{metric} {reference.verdict} ({change}) from GOOD to BAD, measured again now"
    if reference.verdict == "inconclusive":
        conclusion = (
            f"not reproduced in today's environment: {measured}, without a decision (more rounds, "
            f"or --max-rounds, would decide); no culprit looked for"
        )
    else:
        conclusion = f"not reproduced in today's environment: {measured}; no culprit to look for"
    return _reference_alone(reference, suite, metric, commits, fingerprints, conclusion, "not_reproduced")


def unusable(
    reference: Measurement,
    *,
    suite: str,
    metric: str,
    commits: int,
    fingerprints: Mapping[str, Mapping[str, str]],
) -> BisectReport:
    """The report of a bisection whose reference run (GOOD against BAD) measured nothing usable."""
    return _reference_alone(
        reference, suite, metric, commits, fingerprints, f"nothing measured: {reference.why}", "error"
    )


def _reference_alone(
    reference: Measurement,
    suite: str,
    metric: str,
    commits: int,
    fingerprints: Mapping[str, Mapping[str, str]],
    conclusion: str,
    outcome: Status,
) -> BisectReport:
    """A report that ends at its reference run (GOOD against BAD): no probe, no culprit."""
    return BisectReport(
        good=reference.base,
        bad=reference.head,
        suite=suite,
        metric=metric,
        commits=commits,
        culprit=None,
        parent=None,
        measurements=(reference,),
        plain_probes=None,
        conclusion=conclusion,
        fingerprints=fingerprints,
        outcome=outcome,
    )


def stopped(*, good: str, bad: str, suite: str, metric: str, commits: int, why: str) -> BisectReport:
    """The report of a bisection that stopped on an error before it could conclude (a benchmark
    that edited its checkout, a suite that cannot start): nothing it measured is reported."""
    return BisectReport(
        good=good,
        bad=bad,
        suite=suite,
        metric=metric,
        commits=commits,
        culprit=None,
        parent=None,
        measurements=(),
        plain_probes=None,
        conclusion=f"stopped: {why}",
        outcome="error",
    )


# Top-level fingerprint keys that say which commit was measured and when, not in what environment:
# GOOD's and BAD's always differ there, and a reader looking for what changed must not stop at them.
NOT_ENVIRONMENT = ("git", "taken_at")


def side_fingerprints(good: Mapping[str, Any], bad: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """The fingerprints of GOOD and BAD (as a results file records them) flattened to dotted keys with
    text values, without the snapshot taken after the rounds, the commit's identity and the time."""
    return {"good": _flat_text(good), "bad": _flat_text(bad)}


def _flat_text(fingerprint: Mapping[str, Any]) -> dict[str, str]:
    before = {k: v for k, v in fingerprint.items() if k not in AFTER_KEYS and k not in NOT_ENVIRONMENT}
    return {
        clip(key, MAX_FINGERPRINT_KEY): clip(
            value if isinstance(value, str) else json.dumps(value), MAX_FINGERPRINT_VALUE
        )
        for key, value in flatten(before).items()
    }


def _leaning(runs: Sequence[Measurement]) -> list[str]:
    """Notes on the runs whose outcome the statistics did not decide on their own: undecided ones
    placed by the side of the midpoint they lie on, and regressions short of the midpoint."""
    notes = []
    for m in runs:
        if m.purpose == "reference" or m.outcome not in ("bad", "ok"):
            continue
        change = percent(m.ratio - 1 if m.ratio else None)
        if m.verdict == "inconclusive":
            notes.append(
                f"{m.purpose} {m.head[:10]} was inconclusive ({change}); it was counted "
                f"{m.outcome} by the side it leaned to"
            )
        elif m.verdict == "regression" and m.outcome == "ok":
            notes.append(
                f"{m.purpose} {m.head[:10]} regressed {change} against {m.base[:10]}, short "
                "of halfway to BAD: counted ok (the regression may come in steps)"
            )
    return notes


def _confirmed(confirmation: Measurement) -> str:
    """What the culprit's run against its parent established, in words that claim no more."""
    if confirmation.verdict == "regression" and confirmation.outcome == "bad":
        return "confirmed"
    if confirmation.outcome == "bad":
        return (
            "likely, not confirmed: the run against its parent leaned towards the regression "
            "but did not decide it (more rounds would)"
        )
    if confirmation.verdict == "regression":
        return (
            "NOT confirmed: it regressed against its parent, but its measured change is less "
            "than halfway to BAD's; another commit may carry part of the regression"
        )
    return "NOT confirmed against its parent"


def probe_as_confirmation(
    measurements: Sequence[Measurement], parent: str, culprit: str
) -> Measurement | None:
    """The culprit's confirmation taken from a run that already measured it against ``parent``: a
    probe (or its recheck, the latest; GOOD is the parent of the range's first commit), or the
    reference run itself when the range is one commit (BAD, whose parent is GOOD); None when it must
    be measured."""
    probe = next(
        (
            m
            for m in reversed(measurements)
            if m.purpose in ("probe", "recheck", "reference") and (m.base, m.head) == (parent, culprit)
        ),
        None,
    )
    if probe is None:
        return None
    return Measurement(
        "confirm",
        parent,
        culprit,
        probe.outcome,
        probe.verdict,
        probe.ratio,
        probe.ci,
        probe.p_value,
        probe.results_path,
        f"{probe.why} (the {probe.purpose} above)",
    )


def regressed_metric(reference: Comparison, wanted: str | None) -> MetricJudgement:
    """The metric to bisect on: ``wanted``, or the one that regressed most from GOOD to BAD."""
    by_name = {m.name: m for m in reference.metrics}
    if wanted is not None:
        return named_metric_regressed(by_name.get(wanted), wanted, sorted(by_name))
    regressions = [m for m in reference.metrics if m.verdict == "regression"]
    if not regressions:
        headline = next(
            (m for m in reference.metrics if m.role == "headline"),
            reference.metrics[0] if reference.metrics else None,
        )
        raise NotReproduced(
            f"BAD is not measurably slower than GOOD on any metric "
            f"({_summary(reference)}): nothing to bisect",
            headline,
        )
    return max(regressions, key=lambda m: abs(m.change or 0.0))


def named_metric_regressed(
    judged: MetricJudgement | None, name: str, measured: list[str] | None = None
) -> MetricJudgement:
    """``judged`` (the reference run's judgement of metric ``name``), if it regressed."""
    if judged is None:
        known = f" (it measures: {', '.join(measured)})" if measured else ""
        raise BisectError(f"metric '{name}' is not measured by this suite{known}")
    if judged.verdict != "regression":
        raise NotReproduced(
            f"{name} did not regress from GOOD to BAD ({judged.verdict}, "
            f"{percent(judged.change)}): nothing to bisect",
            judged,
        )
    return judged


def judge_probe(
    probe: MetricJudgement | None, reference: MetricJudgement, against: str = "GOOD"
) -> tuple[Outcome, str]:
    """``bad`` / ``ok`` / ``skipped`` for a probe measured against ``against``, and why: bad when
    it regressed at least halfway (on a ratio scale) to the reference's GOOD..BAD change."""
    if probe is None or probe.verdict == "error" or probe.ratio is None:
        return "skipped", "no successful rounds (the commit did not build or run)"
    if probe.verdict in ("unchanged", "improvement"):
        return "ok", f"{probe.verdict} against {against} ({percent(probe.change)})"
    worse = past_halfway(probe.ratio, reference.ratio)
    if probe.verdict == "regression":
        if worse:
            return "bad", f"regressed {percent(probe.change)} against {against}"
        return "ok", (
            f"regressed {percent(probe.change)} against {against}, short of halfway to the "
            f"{percent(reference.change)} from GOOD to BAD"
        )
    return ("bad" if worse else "ok"), (
        f"inconclusive ({percent(probe.change)}); nearer the "
        f"{'regressed' if worse else 'good'} side of "
        f"{percent(reference.change)}"
    )


def past_halfway(ratio: float, reference: float | None) -> bool:
    """Whether ``ratio`` (head / base) lies at or beyond the geometric midpoint of no change (1)
    and the ``reference`` ratio, on the reference's side: for a metric where higher is better
    the reference is below 1."""
    halfway = math.sqrt(reference) if reference and reference > 0 else 1.0
    return ratio >= halfway if halfway >= 1 else ratio <= halfway


def measurement(
    purpose: str,
    base: str,
    head: str,
    judged: MetricJudgement | None,
    outcome: Outcome | None,
    why: str,
    path: str,
) -> Measurement:
    ci = judged.estimate.ci if judged is not None else None
    return Measurement(
        purpose,
        base,
        head,
        outcome,
        judged.verdict if judged else "error",
        judged.ratio if judged else None,
        ci,
        judged.p_value if judged else None,
        path,
        why,
    )


def _summary(comparison: Comparison) -> str:
    return ", ".join(f"{m.name} {m.verdict} {percent(m.change)}" for m in comparison.metrics[:4])
