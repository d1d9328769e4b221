"""`perfbot bisect`: find the first bad commit of GOOD..BAD, benchmarking suspicious commits first.

1. Reference: benchmark GOOD against BAD, and pick the metric that regressed (or the one named).
2. Rank the range with the triage risk engine; `bot.core.bisect.plan.next_step` proposes each
   commit to measure from the results so far (the most suspicious commit's boundary first, then
   halving); each probe benchmarks GOOD against that commit, interleaved on this machine.
3. Confirm the culprit by benchmarking it against its parent, and report it with its risk
   reasons, its file list and the measured change.
4. A confirmation that contradicts the probes (the culprit is no slower than its parent) means one
   of them measured noise: the culprit, then its parent, is measured again against GOOD, and a
   changed outcome sends the search on. Each commit is re-measured at most once, so a regression
   that keeps contradicting itself ends as "not confirmed", never in a loop.

Each run is an ordinary `perfbot bench run` whose results file stays in the output folder; GOOD's
worktree is checked out once and kept for every run against it, and so is GOOD's worker where the
suite has one (`workers.Kept`): warm from the reference run on, it serves every probe's GOOD rounds
(the first and the closing pair still in fresh processes), each run re-checking GOOD's tree before
every round as ever and lending the worker only while the tree is exactly as it last served. A kept
worker that died, or whose tree changed, ends the bisection with an error naming it: no probe is
measured on a stale tree or counted as "skipped" for the commit's sake. The engine's interpreter is
asked for its packages once, for every run's fingerprint. Every worktree is checked before
and after each run's rounds (`provenance`): its HEAD is the commit it names, no tracked file
changed, and the suite's interpreter imports the checkout's packages from it. A re-run with the same
settings and the same output folder reuses the runs already there and measures only what is
missing (`bisect_folder`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.adapters.git_repo import GitRepo
from bot.core.bisect import plan as bisection
from bot.core.bisect import report as bisect_report
from bot.core.bisect.report import BisectError, BisectReport, Measurement, NotReproduced, Suspect
from bot.core.config.schema import RepoConfig
from bot.core.judge import results, stats
from bot.core.risk import profiles, ruleset, triage

from . import bench, provenance
from .bisect_folder import RECHECK, BisectFolder
from .options import MeasureOptions
from .progress import Progress
from .suites import Suite
from .workers import Kept
from .worktrees import Worktrees

# Runs made again, at most, when confirmations contradict the probes (one per commit re-measured).
MAX_RECHECKS = 4


@dataclass
class BisectOptions:
    good: str
    bad: str
    suite: str
    out: Path
    measure: MeasureOptions = field(default_factory=MeasureOptions)  # every run's
    metric: str | None = None
    min_effect: float = stats.DEFAULT_MIN_EFFECT
    alpha: float = stats.DEFAULT_ALPHA
    written: dict[Path, str] = field(default_factory=dict)  # every results file's SHA-256, as written
    profile: bool | None = None  # the confirmation's profiled pass; None: as the suite's config says


def bisect(options: BisectOptions, config: RepoConfig, progress: Progress) -> BisectReport:
    repo = GitRepo.open(options.measure.repo)
    good, bad, count = repo.count_range(options.good, options.bad)
    folder = BisectFolder.open(options.out, run_settings(options, config, good, bad))
    if len(folder):
        progress.say(
            f"bisect: resuming in {options.out}: {len(folder)} run(s) measured there before "
            f"are reused, only what is missing is measured"
        )
    progress.say(f"bisect: ranking the {count} commits of {options.good}..{options.bad} by risk")
    rules = ruleset.build(config, repo.existing_paths(bad, profiles.MARKERS))
    ranked = triage.rank(repo.range_patches(good, bad), rules, f"{good}..{bad}")
    suspects = {
        item.commit.sha: Suspect(item.commit.sha, item.commit.subject, item.report) for item in ranked.commits
    }
    order = repo.rev_list(good, bad)
    with Worktrees(repo) as kept, _kept_workers(kept.root) as workers:
        runner = _Runner(options, config, progress, folder, good, kept, workers)
        progress.say(f"bisect: reference run, GOOD {good[:10]} against BAD {bad[:10]}")
        loaded, path, problem = runner.reference(good, bad)
        if loaded is None or not loaded.metrics:
            why = f"the reference run measured nothing usable: {problem or 'no metric'}"
            progress.say(f"bisect: {why}")
            reference = Measurement("reference", good, bad, None, "error", None, None, None, path, why)
            prints = (
                bisect_report.side_fingerprints(loaded.base.fingerprint, loaded.head.fingerprint)
                if loaded is not None
                else {}
            )
            return bisect_report.unusable(
                reference,
                suite=options.suite,
                metric=options.metric or "",
                commits=count,
                fingerprints=prints,
            )
        fingerprints = bisect_report.side_fingerprints(loaded.base.fingerprint, loaded.head.fingerprint)
        try:
            chosen = runner.regressed(loaded, progress)
        except NotReproduced as missing:
            progress.say(f"bisect: not reproduced: {missing}")
            judged = missing.judged
            reference = bisect_report.measurement("reference", good, bad, judged, None, str(missing), path)
            return bisect_report.not_reproduced(
                reference,
                suite=options.suite,
                metric=judged.name if judged else options.metric or "",
                commits=count,
                fingerprints=fingerprints,
            )
        measurements = [
            bisect_report.measurement(
                "reference", good, bad, chosen, "bad", f"{chosen.name} regressed from GOOD to BAD", path
            )
        ]
        known: dict[str, bisection.Outcome] = {bad: "bad"}
        risk = {sha: s.risk.score for sha, s in suspects.items()}
        rechecked: list[str] = []
        while True:
            step = bisection.next_step(order, known, risk, good=good)
            if isinstance(step, bisection.Probe):
                suspect = suspects[step.sha]
                progress.say(f"bisect: probe {step.sha[:10]} ({suspect.subject[:60]}): {step.reason}")
                outcome, why = runner.against_good(
                    step.sha, chosen, "probe", f"probe-{len(known)}", measurements
                )
                known[step.sha] = outcome
                progress.say(
                    f"bisect:   {outcome}: {chosen.name} {why}"
                    if outcome != "skipped"
                    else f"bisect:   {outcome}: {why}"
                )
                continue
            confirmation = None
            if isinstance(step, bisection.Culprit):
                confirmation = runner.confirm(step.sha, step.parent or good, chosen, measurements)
                if confirmation.outcome != "bad" and runner.recheck(
                    step, known, rechecked, chosen, measurements
                ):
                    measurements.append(confirmation)  # contradicted: kept on record, search goes on
                    continue
            break
    return bisect_report.conclude(
        step,
        good=good,
        bad=bad,
        suite=options.suite,
        metric=chosen.name,
        commits=order,
        suspects=suspects,
        measurements=measurements,
        confirmation=confirmation,
        fingerprints=fingerprints,
    )


@contextmanager
def _kept_workers(root: Path) -> Iterator[Kept]:
    """Workers kept across the bisection's runs (their logs under ``root``), all stopped when it
    ends, however it ends."""
    workers = Kept(root)
    try:
        yield workers
    finally:
        workers.stop_all()


def _named(metric: stats.MetricJudgement) -> str:
    """``cycle_ms (the headline, piecewise)``: the metric a bisection follows, and what it is."""
    words = [
        w
        for w in (
            f"the {metric.role}" if metric.role in ("headline", "diagnostic") else "",
            metric.mode or "",
        )
        if w
    ]
    return metric.name + (f" ({', '.join(words)})" if words else "")


def _change(metric: stats.MetricJudgement) -> str:
    return "changed" if metric.change is None else f"{metric.change:+.1%}"


def run_settings(options: BisectOptions, config: RepoConfig, good: str, bad: str) -> dict[str, Any]:
    """What the runs of this bisection depend on, as its output folder records it: a re-run that
    differs in any of these cannot reuse them. (The judgement's --alpha and --min-effect can
    change: the runs are judged again each time.)"""
    measured = bench.plan(_bench_options(options, good, bad, options.out / "unused.json"), config.bench)
    suite = config.bench.suites.get(options.suite)
    return {
        "good": good,
        "bad": bad,
        "suite": options.suite,
        "metric": options.metric,
        "rounds": measured.rounds,
        "max_rounds": measured.max_rounds,
        "warmup": measured.warmup,
        "timeout": measured.round_timeout(measured.suites[0]),
        "command": options.measure.command,
        "suite_config": suite.model_dump(mode="json") if suite is not None else None,
    }


def _bench_options(
    options: BisectOptions, base: str, head: str, out: Path, profile: bool | None = None
) -> bench.BenchOptions:
    return bench.BenchOptions(
        base=base,
        head=head,
        suites=[options.suite],
        out=out,
        measure=options.measure,
        profile=profile,
        written=options.written,
    )


class _Runner:
    """Benchmark runs of the bisection, each a `perfbot bench run` into the output folder. A run the
    folder already holds is reused; GOOD's worktree is checked out once, for every run against it."""

    def __init__(
        self,
        options: BisectOptions,
        config: RepoConfig,
        progress: Progress,
        folder: BisectFolder,
        good: str,
        kept: Worktrees,
        workers: Kept | None = None,
    ):
        self.options, self.config, self.progress = options, config, progress
        self.folder, self.good, self.kept = folder, good, kept
        self.workers = workers if workers is not None else Kept()
        self.stacks: dict[str, dict] = {}  # the engine interpreter's packages, asked once
        self._good_tree: Path | None = None

    def run(self, base: str, head: str, label: str) -> Path:
        kind = RECHECK if label.startswith(RECHECK) else None
        reused = self.folder.reusable(base, head, kind)
        if reused is not None:
            self.progress.say(f"bisect:   reusing {reused.name}, measured before")
            return reused
        path = self.folder.path / f"{label}-{head[:10]}.json"
        # Only the confirmation's kernels are reported (the culprit against its parent): the other
        # runs skip the profiled pass, whatever the suite's config says.
        options = _bench_options(
            self.options, base, head, path, self.options.profile if label == "confirm" else False
        )
        planned = bench.plan(options, self.config.bench)  # once: the run below is given it
        # a probe's regression only steers the search, and the confirmation is a run at the run's
        # level: none goes on to the level at which one run opens a case on the default branch
        planned.watch_level = False
        suite = planned.suites[0]
        with Worktrees(self.kept.repo, self.kept.root) as scratch:
            trees = {
                "base": self.good_tree() if base == self.good else scratch.add("base", base),
                "head": scratch.add("head", head),
            }
            shas = {"base": base, "head": head}
            for side, tree in trees.items():
                self.verified(tree, shas[side], suite, "before the rounds")
            outcome = bench.run(
                options,
                self.config.bench,
                self.progress,
                trees["base"],
                trees["head"],
                planned,
                kept=self.workers,
                keep=trees["base"] if base == self.good else None,
                stacks=self.stacks,
            )[0]
            try:
                if outcome.lost:
                    raise BisectError(f"the {label} run of {head[:10]} measured nothing: {outcome.lost}")
                for side, tree in trees.items():
                    self.verified(tree, shas[side], suite, "after the rounds")
            except BisectError:
                outcome.path.replace(outcome.path.with_suffix(".unverified"))  # never reused
                raise
        return outcome.path

    def verified(self, tree: Path, sha: str, suite: Suite, when: str) -> None:
        try:
            checked = provenance.verify(tree, sha, suite, when)
        except provenance.ProvenanceError as error:
            raise BisectError(str(error)) from None
        self.progress.say(f"bisect:   {checked.describe()} ({when})")

    def good_tree(self) -> Path:
        if self._good_tree is None:
            self._good_tree = self.kept.add("good", self.good)
        return self._good_tree

    def recheck(
        self,
        culprit: bisection.Culprit,
        known: dict[str, bisection.Outcome],
        rechecked: list[str],
        chosen: stats.MetricJudgement,
        measurements: list[Measurement],
    ) -> bool:
        """After a confirmation that found the culprit no slower than its parent, measure the
        culprit and then its parent against GOOD once more; True when one of them came out
        otherwise than before (``known`` then says so, and the search goes on)."""
        for sha in (culprit.sha, culprit.parent):
            if sha is None or sha == self.good or sha in rechecked or len(rechecked) >= MAX_RECHECKS:
                continue
            rechecked.append(sha)
            self.progress.say(
                f"bisect: the confirmation contradicts the probes; measuring {sha[:10]} against GOOD again"
            )
            outcome, why = self.against_good(
                sha, chosen, RECHECK, f"{RECHECK}-{len(rechecked)}", measurements
            )
            self.progress.say(f"bisect:   {outcome}: {why}")
            if outcome in ("ok", "bad") and outcome != known.get(sha):
                known[sha] = outcome
                return True
        return False

    def against_good(
        self,
        sha: str,
        chosen: stats.MetricJudgement,
        purpose: str,
        label: str,
        measurements: list[Measurement],
    ) -> tuple[bisection.Outcome, str]:
        """Measure ``sha`` against GOOD on the chosen metric (a probe, or a probe again), judge it
        against the reference and add it to ``measurements``: its outcome, and why."""
        judged, path = self.metric(self.good, sha, chosen.name, label)
        outcome, why = bisect_report.judge_probe(judged, chosen)
        measurements.append(bisect_report.measurement(purpose, self.good, sha, judged, outcome, why, path))
        return outcome, why

    def confirm(
        self, culprit: str, parent: str, chosen: stats.MetricJudgement, measurements: list[Measurement]
    ) -> Measurement:
        """The culprit measured against its parent; a probe that already did so counts."""
        confirmation = bisect_report.probe_as_confirmation(measurements, parent, culprit)
        if confirmation is not None:
            return confirmation
        self.progress.say(f"bisect: confirming {culprit[:10]} against its parent {parent[:10]}")
        judged, path = self.metric(parent, culprit, chosen.name, "confirm")
        outcome, why = bisect_report.judge_probe(judged, chosen, against="its parent")
        return bisect_report.measurement("confirm", parent, culprit, judged, outcome, why, path)

    def reference(self, good: str, bad: str) -> tuple[results.Results | None, str, str | None]:
        """GOOD against BAD: the results file loaded (None when it measured nothing usable), its
        path, and what was wrong with it."""
        path = self.run(good, bad, "reference")
        try:
            return _load(path, good, bad), str(path), None
        except results.ResultsError as error:
            return None, str(path), str(error)

    def regressed(self, loaded: results.Results, progress: Progress) -> stats.MetricJudgement:
        """The metric to bisect on, from the reference run: the one named, else the headline if it
        regressed, else the one that regressed most; `NotReproduced` when it did not regress."""
        name = self.options.metric
        if name is not None:  # one metric named: judged alone, not sharing the false-alarm rate
            judged = self.judge(loaded, name) if name in loaded.metrics else None
            chosen = bisect_report.named_metric_regressed(judged, name, sorted(loaded.metrics))
            progress.say(
                f"bisect: bisecting on {_named(chosen)} (--metric), {_change(chosen)} from GOOD to BAD"
            )
            return chosen
        comparison = stats.decide(loaded, self.options.min_effect, self.options.alpha)
        headline = next((m for m in comparison.metrics if m.role == "headline"), None)
        lead = headline.name if headline is not None and headline.verdict == "regression" else None
        chosen = bisect_report.regressed_metric(comparison, lead)
        progress.say(
            f"bisect: bisecting on {_named(chosen)}, {_change(chosen)} from GOOD to BAD"
            + (
                ""
                if lead or headline is None
                else f" (the headline {headline.name} did not regress: {headline.verdict})"
            )
        )
        return chosen

    def metric(self, base: str, head: str, name: str, label: str) -> tuple[stats.MetricJudgement | None, str]:
        """The judgement of one metric, or None when the run measured nothing (a skip)."""
        path = self.run(base, head, label)
        try:
            loaded = _load(path, base, head)
        except results.ResultsError:
            return None, str(path)
        if name not in loaded.metrics:
            return None, str(path)
        return self.judge(loaded, name), str(path)

    def judge(self, loaded: results.Results, name: str) -> stats.MetricJudgement:
        values = (loaded.values("base", name), loaded.values("head", name))
        spec = loaded.metrics[name]
        return stats.judge(
            *values,
            better=spec.better,
            min_effect=self.options.min_effect,
            alpha=self.alpha(),
            name=name,
            unit=spec.unit,
            base_se=loaded.spreads("base", name),
            head_se=loaded.spreads("head", name),
            role=loaded.role(name),
            mode=spec.mode,
        )

    def alpha(self) -> float:
        """The significance level of one judgement: split over the looks that adaptive rounds
        may take, as `perfbot compare` does, so that peeking does not raise false alarms."""
        rounds, most = bench.round_limits(self.options.measure, self.config.bench)
        return stats.alpha_per_look(self.options.alpha, results.looks(rounds, most))


def _load(path: Path, base: str, head: str) -> results.Results:
    """The results file of a run of ``head`` against ``base``; `BisectError` when it records other
    commits (its numbers are not about the commits the bisection asked for)."""
    loaded = results.load(path.read_bytes(), str(path))
    if (loaded.base.sha, loaded.head.sha) != (base, head):
        raise BisectError(
            f"{path}: measured {loaded.base.sha[:10]}..{loaded.head.sha[:10]}, not the "
            f"{base[:10]}..{head[:10]} asked for"
        )
    return loaded
