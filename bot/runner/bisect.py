"""`perfbot bisect`: find the first bad commit of GOOD..BAD, benchmarking suspicious commits first.

1. Reference: benchmark GOOD against BAD, and pick the metric that regressed (or the one named).
2. Rank the range with the triage risk engine; `bot.core.bisect.plan.next_step` proposes each
   commit to measure from the results so far (the most suspicious commit's boundary first, then
   halving); each probe benchmarks GOOD against that commit, interleaved on this machine.
3. Confirm the culprit by benchmarking it against its parent, and report it with its risk
   reasons, its file list and the measured change.

Each run is an ordinary `perfbot bench run` whose results file stays in the output folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.adapters import git_repo
from bot.core.bisect import plan as bisection
from bot.core.bisect import report as bisect_report
from bot.core.bisect.report import BisectError, BisectReport, Measurement, Suspect
from bot.core.config.schema import RepoConfig
from bot.core.judge import results, stats
from bot.core.judge.quantities import percent
from bot.core.risk import profiles, ruleset, triage

from . import bench
from .progress import Progress


@dataclass
class BisectOptions:
    repo: Path
    good: str
    bad: str
    suite: str
    out: Path
    metric: str | None = None
    rounds: int | None = None
    max_rounds: int | None = None
    warmup: int | None = None
    timeout: float | None = None
    command: str | None = None
    allow_dirty: bool = False
    python: str | None = None
    min_effect: float = stats.DEFAULT_MIN_EFFECT
    alpha: float = stats.DEFAULT_ALPHA


def bisect(options: BisectOptions, config: RepoConfig, progress: Progress) -> BisectReport:
    repo = git_repo.open_repo(options.repo)
    good, bad, count = git_repo.count_range(repo, options.good, options.bad)
    progress.say(f"bisect: ranking the {count} commits of {options.good}..{options.bad} by risk")
    rules = ruleset.build(config, git_repo.existing_paths(repo, bad, profiles.MARKERS))
    ranked = triage.rank(git_repo.range_patches(repo, good, bad), rules, f"{good}..{bad}")
    suspects = {item.commit.sha: Suspect(item.commit.sha, item.commit.subject, item.report)
                for item in ranked.commits}
    order = list(reversed(repo.git.rev_list("--topo-order", f"{good}..{bad}", "--").split()))
    runner = _Runner(options, config, progress)

    progress.say(f"bisect: reference run, GOOD {good[:10]} against BAD {bad[:10]}")
    if options.metric is None:
        reference_cmp, path = runner.compare(good, bad, "reference")
        chosen = bisect_report.regressed_metric(reference_cmp, None)
    else:  # one metric named: judge it alone, without sharing the false-alarm rate with others
        judged, path = runner.metric(good, bad, options.metric, "reference")
        chosen = bisect_report.named_metric_regressed(judged, options.metric)
    measurements = [bisect_report.measurement("reference", good, bad, chosen, "bad",
                                              f"{chosen.name} regressed from GOOD to BAD", path)]
    known: dict[str, bisection.Outcome] = {bad: "bad"}
    risk = {sha: s.risk.score for sha, s in suspects.items()}
    while True:
        step = bisection.next_step(order, known, risk, good=good)
        if not isinstance(step, bisection.Probe):
            break
        suspect = suspects[step.sha]
        progress.say(f"bisect: probe {step.sha[:10]} ({suspect.subject[:60]}): {step.reason}")
        judged, path = runner.metric(good, step.sha, chosen.name, f"probe-{len(known)}")
        outcome, why = bisect_report.judge_probe(judged, chosen)
        known[step.sha] = outcome
        measurements.append(bisect_report.measurement("probe", good, step.sha, judged, outcome, why, path))
        progress.say(f"bisect:   {outcome}: {why}")
    return _conclude(step, order, suspects, chosen, measurements, runner, options, count)


def _conclude(step: bisection.Step, order: list[str], suspects: dict[str, Suspect],
              chosen: stats.MetricJudgement, measurements: list[Measurement], runner: _Runner,
              options: BisectOptions, count: int) -> BisectReport:
    good, bad = measurements[0].base, measurements[0].head
    report = BisectReport(good, bad, options.suite, chosen.name, count, None, None, measurements,
                          None, "", notes=list(step.notes))
    if isinstance(step, bisection.GiveUp):
        report.conclusion = f"no single culprit: {step.reason}"
        report.candidates = list(step.candidates)
        return report
    culprit = suspects[step.sha]
    parent = step.parent or good
    measured = next((m for m in measurements if m.purpose == "probe" and m.base == parent
                     and m.head == culprit.sha), None)
    if measured is not None:  # the culprit's parent is GOOD: its probe already was the comparison
        confirmation = Measurement("confirm", parent, culprit.sha, measured.outcome, measured.verdict,
                                   measured.ratio, measured.ci, measured.p_value,
                                   measured.results_path, f"{measured.why} (the probe above)")
        change = percent(measured.ratio - 1 if measured.ratio else None)
    else:
        runner.progress.say(f"bisect: confirming {culprit.sha[:10]} against its parent {parent[:10]}")
        judged, path = runner.metric(parent, culprit.sha, chosen.name, "confirm")
        outcome, why = bisect_report.judge_probe(judged, chosen, against="its parent")
        confirmation = bisect_report.measurement("confirm", parent, culprit.sha, judged, outcome,
                                                 why, path)
        change = percent(judged.change if judged else None)
    measurements.append(confirmation)
    report.culprit, report.parent = culprit, parent
    report.plain_probes = bisection.plain_probes(len(order), order.index(culprit.sha))
    verdict = "confirmed" if confirmation.outcome == "bad" else "NOT confirmed against its parent"
    report.conclusion = (f"first bad commit {culprit.sha[:10]} ({culprit.subject}): {chosen.name} "
                         f"{change} against its parent, {verdict}")
    return report


class _Runner:
    """Benchmark runs of the bisection, each a `perfbot bench run` into the output folder."""

    def __init__(self, options: BisectOptions, config: RepoConfig, progress: Progress):
        self.options, self.config, self.progress = options, config, progress
        options.out.mkdir(parents=True, exist_ok=True)

    def run(self, base: str, head: str, label: str) -> Path:
        o = self.options
        path = o.out / f"{label}-{head[:10]}.json"
        bench_options = bench.BenchOptions(
            repo=o.repo, base=base, head=head, suites=[o.suite], out=path, rounds=o.rounds,
            warmup=o.warmup, max_rounds=o.max_rounds, timeout=o.timeout, command=o.command,
            allow_dirty=o.allow_dirty, python=o.python)
        outcome = bench.run(bench_options, self.config.bench, self.progress)[0]
        return outcome.path

    def compare(self, base: str, head: str, label: str) -> tuple[stats.Comparison, str]:
        path = self.run(base, head, label)
        try:
            loaded = results.load(path.read_bytes(), str(path))
        except results.ResultsError as error:
            raise BisectError(f"the {label} run measured nothing usable: {error}") from None
        return stats.decide(loaded, self.options.min_effect, self.options.alpha), str(path)

    def metric(self, base: str, head: str, name: str, label: str) -> tuple[stats.MetricJudgement | None, str]:
        """The judgement of one metric, or None when the run measured nothing (a skip)."""
        path = self.run(base, head, label)
        try:
            loaded = results.load(path.read_bytes(), str(path))
        except results.ResultsError:
            return None, str(path)
        if name not in loaded.metrics:
            return None, str(path)
        values = (loaded.values("base", name), loaded.values("head", name))
        spec = loaded.metrics[name]
        judged = stats.judge(*values, better=spec.better, min_effect=self.options.min_effect,
                             alpha=self.alpha(), name=name, unit=spec.unit)
        return judged, str(path)

    def alpha(self) -> float:
        """The significance level of one judgement: split over the looks that adaptive rounds
        may take, as `perfbot compare` does, so that peeking does not raise false alarms."""
        rounds = self.options.rounds or self.config.bench.rounds
        looks = results.looks(rounds, self.options.max_rounds or rounds)
        return stats.alpha_per_look(self.options.alpha, looks)
