"""The H200 results files in benchmarks/results, replayed: the verdicts each must give, from all its
rounds and from its first three rounds per side (what a run of `--rounds 3` would have seen)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.core.bisect import plan as bisection
from bot.core.bisect import report as bisect_report
from bot.core.judge import results, stats
from bot.core.render import compare as render_compare
from bot.core.risk.scoring import RiskReport

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
CLAIMS = ("regression", "improvement")


def replay(name: str, rounds: int | None = None) -> tuple[results.Results, stats.Comparison]:
    """The file judged as `perfbot compare` judges it, keeping the first ``rounds`` per side."""
    doc = json.loads((RESULTS / name).read_text())
    if rounds is not None:
        doc["rounds"] = [r for r in doc["rounds"] if r["index"] < rounds]
        doc["options"] = {**doc.get("options", {}), "rounds": rounds, "max_rounds": rounds}
    loaded = results.load(json.dumps(doc))
    return loaded, stats.decide(loaded)


def by_name(comparison: stats.Comparison) -> dict[str, stats.MetricJudgement]:
    return {m.name: m for m in comparison.metrics}


@pytest.mark.parametrize("rounds", [None, 3])
def test_the_slow_commit_is_a_regression_of_the_piecewise_verify_step(rounds):
    _, comparison = replay("verify-step-ab.json", rounds)
    piecewise = by_name(comparison)["verify_piecewise_ms"]
    assert comparison.verdict == "regression"
    assert piecewise.verdict == "regression" and 0.08 < piecewise.change < 0.20
    assert piecewise.estimate.ci[0] > 1.05
    assert render_compare.headline(comparison).startswith(
        "This PR makes the EAGLE-3 verify step (piecewise CUDA graph)"
    )


@pytest.mark.parametrize("name", ["verify-step-aa.json", "run1-verify-step-aa.json"])
@pytest.mark.parametrize("rounds", [None, 3])
def test_the_parent_against_itself_is_unchanged_and_its_noisy_diagnostics_do_not_say_otherwise(name, rounds):
    _, comparison = replay(name, rounds)
    assert comparison.verdict == "unchanged"
    assert not [m.name for m in comparison.metrics if m.verdict in CLAIMS]
    assert all(m.verdict == "unchanged" for m in comparison.deciding)
    undecided = {m.name for m in comparison.metrics if m.verdict == "inconclusive"}
    assert undecided <= {"verify_eager_ms", "allreduce_verify_us", "allreduce_draft_us"}
    assert comparison.extra_rounds is None


ONE_GPU = [
    "h200-1gpu/ab-1.json",
    "h200-1gpu/ab-2.json",
    "h200-1gpu/aa-1.json",
    "h200-1gpu/aa-2.json",
    "h200-1gpu/one-rank/ab-1.json",
    "h200-1gpu/one-rank/aa-1.json",
]


@pytest.mark.parametrize("name", ONE_GPU)
def test_one_gpu_runs_are_unchanged_on_the_piecewise_cycle_in_three_rounds(name):
    # At world size 1 the sample's slow allreduce path is not on the measured path: the A/B of the
    # slow commit is unchanged work there, as much as the A/A.
    _, comparison = replay(name)
    cycle = by_name(comparison)["cycle_ms"]
    assert comparison.verdict == "unchanged" and comparison.extra_rounds is None
    assert cycle.verdict == "unchanged" and cycle.mode == "piecewise"
    assert not [m.name for m in comparison.metrics if m.verdict in CLAIMS]
    undecided = {m.name for m in comparison.metrics if m.verdict == "inconclusive"}
    assert undecided <= {"verify_eager_ms", "allreduce_verify_us", "allreduce_draft_us"}
    if name.startswith("h200-1gpu/one-rank/"):
        assert not {"allreduce_verify_us", "allreduce_draft_us"} & {m.name for m in comparison.metrics}


def test_the_first_run_calls_the_slower_allreduce_and_eager_pass_but_only_as_diagnostics():
    # Measured before the piecewise mode existed: the cycle followed the full graph, which the
    # slow commit barely moves (+0.6%, inside the ±2% band).
    _, comparison = replay("run1-verify-step-ab.json")
    judged = by_name(comparison)
    assert comparison.verdict == "unchanged"
    assert {n for n, m in judged.items() if m.verdict == "regression"} == {
        "allreduce_verify_us",
        "allreduce_draft_us",
        "verify_eager_ms",
    }
    assert judged["cycle_ms"].verdict == "unchanged"
    assert any("allreduce_verify_us is a diagnostic" in note for note in comparison.notes)


@pytest.mark.parametrize("rounds", [None, 3])
@pytest.mark.parametrize(
    "name,verdict",
    [
        ("bisect/reference-95960e0787.json", "regression"),
        ("bisect/probe-1-46057cffd4.json", "unchanged"),
        ("bisect/confirm-22cf1e363a.json", "regression"),
    ],
)
def test_the_bisection_runs_decide_on_the_piecewise_verify_step(name, verdict, rounds):
    _, comparison = replay(name, rounds)
    assert by_name(comparison)["verify_piecewise_ms"].verdict == verdict
    assert comparison.verdict == verdict


GOOD, PARENT, CULPRIT, BAD = (
    "23175702f62030cf9323598cc60e2f3e8e1e0f01",
    "46057cffd434db780bd712dfcf69c1e784eddb0f",
    "22cf1e363ac7a32aac1e4bfd741ae53d200513c0",
    "95960e0787179a844b8ccad0d5c1968529f12449",
)


def bisection_metric(name: str, rounds: int) -> stats.MetricJudgement:
    """The bisection's own judgement of one run: the chosen metric alone, at the level its adaptive
    rounds (3 to 5 per side) allow."""
    loaded, _ = replay(name, rounds)
    metric = "verify_piecewise_ms"
    return stats.judge(
        loaded.values("base", metric),
        loaded.values("head", metric),
        alpha=stats.alpha_per_look(stats.DEFAULT_ALPHA, results.looks(3, 5)),
        name=metric,
        unit="ms",
    )


@pytest.mark.parametrize("rounds", [5, 3])
def test_the_bisection_of_the_sample_confirms_its_culprit_by_a_verdict(rounds):
    reference = bisection_metric("bisect/reference-95960e0787.json", rounds)
    assert reference.verdict == "regression"
    runs = [bisect_report.measurement("reference", GOOD, BAD, reference, "bad", "reference", "r")]
    for sha, name in (
        (PARENT, "bisect/probe-1-46057cffd4.json"),
        (CULPRIT, "bisect/probe-2-22cf1e363a.json"),
    ):
        judged = bisection_metric(name, rounds)
        outcome, why = bisect_report.judge_probe(judged, reference)
        runs.append(bisect_report.measurement("probe", GOOD, sha, judged, outcome, why, name))
    assert [m.outcome for m in runs[1:]] == ["ok", "bad"]
    judged = bisection_metric("bisect/confirm-22cf1e363a.json", rounds)
    outcome, why = bisect_report.judge_probe(judged, reference, against="its parent")
    confirmation = bisect_report.measurement("confirm", PARENT, CULPRIT, judged, outcome, why, "c")
    blank = RiskReport(score=0, level="none", profile="generic", files=[], signals=[])
    suspects = {sha: bisect_report.Suspect(sha, sha[:4], blank) for sha in (PARENT, CULPRIT, BAD)}
    report = bisect_report.conclude(
        bisection.Culprit(CULPRIT, PARENT, 2),
        good=GOOD,
        bad=BAD,
        suite="verify-step",
        metric="verify_piecewise_ms",
        commits=[PARENT, CULPRIT, BAD],
        suspects=suspects,
        measurements=runs,
        confirmation=confirmation,
    )
    assert confirmation.verdict == "regression"
    assert report.conclusion.endswith("against its parent, confirmed")
