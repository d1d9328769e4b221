"""The watch over streams of default-branch runs, as it lives: every run's points stored as a
completed run stores them, the watch's look after each (its chain of jobs, run as the worker runs them), the real store and the
fake GitHub. One step is one case and one bisect; inconclusive merge runs and a noisy second
metric neither hide nor fake it; the budget's reserve comes back when a bisect will not report."""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import pytest

from bot.core.config.schema import load
from bot.core.watch import cases as states
from bot.service import hourly, watch
from bot.service.records import BenchRequest, BenchResult, MetricPoint, Repository
from bot.service.services import Services
from tests.service.fakes import FakeGitHub, FakeGitHubFactory, FakeQueue
from tests.service.test_bench import CONFIG, NOW, REPO, look_at, make_github

SUITE = "verify-step"


@pytest.fixture
def github() -> FakeGitHub:
    github = make_github()
    github.files[(REPO, ".github/perfbot.yml", "main")] = CONFIG
    return github


@pytest.fixture
def services(github, sqlite_store) -> Services:
    services = Services(store=sqlite_store, github=FakeGitHubFactory(github), queue=FakeQueue())
    services.now = lambda: NOW
    return services


def sha(n: int) -> str:
    return f"{n:040x}"


def run(
    services,
    github,
    index: int,
    values: dict[str, float],
    *,
    chained: bool,
    config: str = CONFIG,
    verdict: tuple[str, float, int] = ("inconclusive", 0.5, 1),
):
    """The run of point ``index`` (commit ``index + 1``) stored as a completed default-branch run
    stores it, every metric primary with the run's ``verdict`` (its word, adjusted p-value and
    looks; inconclusive by default), then the watch's look."""
    head = sha(index + 1)
    base = sha(index) if chained else sha(index + 10_000)  # daily: other commits in between
    request = BenchRequest(
        correlation_id=f"pb-p{index}",
        repo=REPO,
        installation_id=42,
        number=None,
        base_sha=base,
        head_sha=head,
        suites=(SUITE,),
        trigger="schedule",
        status="completed",
        created_at=NOW,
    )
    stored, _ = services.store.benchmarks.open(request)
    word, p_value, looks = verdict
    ratio = 1.1 if word == "regression" else 1.0
    metrics = [
        {"name": name, "role": "primary", "verdict": word, "ratio": ratio, "p_value": p_value}
        for name in values
    ]
    prints = {"base": {"driver": "base-of-" + head[-4:]}, "head": {"driver": "of-" + head[-4:]}}
    result = BenchResult(
        suite=SUITE,
        base_sha=base,
        head_sha=head,
        verdict=word,
        headline_metric=next(iter(values)),
        headline_change=ratio - 1,
        comparison=json.dumps({"metrics": metrics, "fingerprints": prints, "method": {"looks": looks}}),
        on_default_branch=True,
    )
    points = [MetricPoint(SUITE, name, "ms", "lower", head, value) for name, value in values.items()]
    services.store.benchmarks.complete(stored, [result], points, f"run:{index}")
    github.files[(REPO, ".github/perfbot.yml", "main")] = config
    look_at(services, services.store.benchmarks.get(f"pb-p{index}"))


def bisects(github) -> list[dict]:
    return [d for d in github.dispatches if d["inputs"].get("mode") == "bisect"]


def stepped(n: int = 40, at: int = 20, step: float = 0.08, cv: float = 0.01, seed: int = 1) -> list[float]:
    rng = np.random.default_rng(seed)
    values = 10 * (1 + rng.normal(0, cv, n))
    values[at:] *= 1 + step
    return values.tolist()


def test_one_step_opens_one_case_and_one_bisect_however_many_points_follow(services, github):
    # The old watch opened a case at the 3rd, 4th and 5th new point, each a span too early, and
    # bisected each: three bisects for one regression.
    values = stepped()
    for index, value in enumerate(values):
        run(services, github, index, {"step_ms": value}, chained=False)
    [case] = services.store.watch.cases(None)
    assert (case.good_sha, case.bad_sha, case.state) == (sha(20), sha(21), states.BISECTING)
    assert len(bisects(github)) == 1


def test_every_merge_measured_and_each_run_inconclusive_the_series_finds_the_step(services, github):
    # Each point one commit after the last: the old watch left such a span to the merge run's own
    # verdict, which was inconclusive, and never opened a case.
    for index, value in enumerate(stepped(step=0.058, cv=0.01, seed=4)):
        run(services, github, index, {"step_ms": value}, chained=True)
    [case] = services.store.watch.cases(None)
    assert (case.good_sha, case.bad_sha) == (sha(20), sha(21)) and len(bisects(github)) == 1


def test_merge_runs_that_say_regression_at_their_own_level_open_no_case_on_a_quiet_stream(services, github):
    # Every merge measured, and one run in twenty says "regression" at the run's own level, as one
    # in two hundred does on a quiet branch: the old watch opened a case on each of them.
    rng = np.random.default_rng(12)
    for index, value in enumerate((10 * (1 + rng.normal(0, 0.01, 40))).tolist()):
        said = ("regression", 0.004, 1) if index % 20 == 7 else ("inconclusive", 0.5, 1)
        run(services, github, index, {"step_ms": value}, chained=True, verdict=said)
    assert services.store.watch.cases(None) == [] and bisects(github) == []


def test_a_merge_run_s_regression_at_the_watch_s_level_opens_its_case_at_once(services, github):
    values = stepped(n=24, at=20)
    for index, value in enumerate(values):
        # the looks of an adaptive run divide the watch's level: 5e-5 over 4 looks is not enough
        said = ("regression", 5e-5, 4) if index == 20 else ("inconclusive", 0.5, 1)
        run(services, github, index, {"step_ms": value}, chained=True, verdict=said)
    assert services.store.watch.cases(None) == []
    run(services, github, 24, {"step_ms": values[-1]}, chained=True, verdict=("regression", 2e-6, 4))
    [case] = services.store.watch.cases(None)
    assert (case.source, case.good_sha, case.bad_sha) == ("merge", sha(24), sha(25))
    assert len(bisects(github)) == 1


def test_a_noisy_second_metric_neither_hides_the_stable_ones_step_nor_fakes_one(services, github):
    # The old watch followed the metric with the worst verdict of each run (a noisy p99 here).
    step = stepped(seed=2)
    noisy = (10 * (1 + np.random.default_rng(3).standard_t(3, 40) * 0.15)).tolist()
    for index in range(40):
        run(services, github, index, {"p99_ms": noisy[index], "step_ms": step[index]}, chained=False)
    [case] = services.store.watch.cases(None)
    assert (case.metric, case.good_sha, case.bad_sha) == ("step_ms", sha(20), sha(21))
    assert [d["inputs"]["metric"] for d in bisects(github)] == ["step_ms"]


def test_two_metrics_that_step_together_are_one_case_and_one_bisect(services, github):
    a, b = stepped(seed=5), stepped(seed=6)
    for index in range(40):
        run(services, github, index, {"cycle_ms": a[index], "verify_ms": b[index]}, chained=False)
    assert len(services.store.watch.cases(None)) == 1 and len(bisects(github)) == 1


def test_a_metric_name_of_a_parametrised_test_is_bisected_and_wedges_nothing(services, github):
    name = "test_attn_bf16+causal@sm90-" + "x" * 73
    assert len(name) == 100
    for index, value in enumerate(stepped(seed=7)):
        run(services, github, index, {name: value}, chained=False)
    [case] = services.store.watch.cases(None)
    assert case.state == states.BISECTING
    [dispatched] = bisects(github)
    assert dispatched["inputs"]["metric"] == name


def test_a_quiet_stream_opens_nothing(services, github):
    rng = np.random.default_rng(11)
    for index, value in enumerate((10 * (1 + rng.normal(0, 0.02, 60))).tolist()):
        run(services, github, index, {"step_ms": value}, chained=False)
    assert services.store.watch.cases(None) == [] and bisects(github) == []


def test_a_case_whose_series_comes_back_ends_by_itself(services, github):
    config = CONFIG + "  watch:\n    bisect: false\n"
    values = stepped(n=32, at=20)
    values += [10.0 + 0.05 * (i % 3) for i in range(8)]  # back at the old level
    for index, value in enumerate(values):
        run(services, github, index, {"step_ms": value}, chained=False, config=config)
    [case] = services.store.watch.cases(None)
    assert case.state == states.RECOVERED and "back within noise" in states.LABELS[case.state]


def test_a_dispatch_github_refuses_gives_the_reserve_back(services, github):
    github.workflows.clear()  # GitHub answers 404: no such workflow
    for index, value in enumerate(stepped()):
        run(services, github, index, {"step_ms": value}, chained=False)
    [case] = services.store.watch.cases(None)
    assert case.state == states.FAILED and case.gpu_minutes == 0.0
    assert services.store.watch.spending(REPO, "2026-12-01").spent == 0.0


def test_budget_a_bisect_gives_back_by_reporting_early_is_used_the_same_day(services, github):
    """Two regressions, a budget for one bisect's reserve: the second waits, and when the first
    reports after two runs (10 minutes, not 40) the sweep dispatches the second that day."""
    from tests.core.bench import test_bisect_artifact as reports
    from tests.core.bench.zips import archive
    from tests.service.test_bench import send, workflow_run

    config = CONFIG + "    budget: 60\n"
    github.files[(REPO, ".github/perfbot.yml", "main")] = config
    chain = (reports.BAD, reports.SECOND, reports.FIRST, reports.GOOD)
    github.parents.update({(REPO, child): parent for child, parent in zip(chain, chain[1:], strict=False)})
    _, [first] = watch.open_by_hand(
        services, REPO, 42, reports.GOOD, reports.BAD, ["spin"], "step_ms", "m", 7
    )
    first = watch.bisect(services, github, first, load(config), "main")
    _, [second] = watch.open_by_hand(services, REPO, 42, sha(1), sha(2), ["spin"], "step_ms", "m", 7)
    second = watch.bisect(services, github, second, load(config), "main")
    assert (first.state, second.state) == (states.BISECTING, states.OUT_OF_BUDGET)
    [dispatched] = bisects(github)
    report = reports.culprit_report()
    github.upload_artifact(
        REPO,
        dispatched["run_id"],
        f"perfbot-results-{first.correlation_id}",
        archive(reports.artifact(report)),
    )
    send(services, "workflow_run", workflow_run(github, dispatched["run_id"]))
    services.store.installations.replace(42, [Repository(1, REPO, 42)])
    hourly.sweep(services)
    assert services.store.watch.get(second.key).state == states.BISECTING


def test_the_sweep_dispatches_the_oldest_waiting_case_first(services, github):
    config = CONFIG + "    budget: 40\n"
    github.files[(REPO, ".github/perfbot.yml", "main")] = config
    opened = []
    for minute, (good, bad) in enumerate(((1, 2), (3, 4), (5, 6))):
        services.now = lambda minute=minute: NOW + timedelta(minutes=minute)
        _, [case] = watch.open_by_hand(services, REPO, 42, sha(good), sha(bad), ["spin"], "step_ms", "m", 7)
        opened.append(case)
    services.store.watch.charge("other", REPO, "2026-12-01", "merge", "high", 40.0, lambda spent: True, NOW)
    for case in reversed(opened):
        watch.bisect(services, github, case, load(config), "main")
    assert all(services.store.watch.get(c.key).state == states.OUT_OF_BUDGET for c in opened)
    services.now = lambda: NOW + timedelta(days=1)
    services.store.installations.replace(42, [Repository(1, REPO, 42)])
    hourly.sweep(services)
    assert [services.store.watch.get(c.key).state for c in opened] == [
        states.BISECTING,
        states.OUT_OF_BUDGET,
        states.OUT_OF_BUDGET,
    ]


def test_a_change_point_not_reproduced_shows_the_runs_that_found_it_beside_todays(services, github):
    """Its page showed no fingerprints of the original runs: only a merge run's were looked up."""
    from bot.service.dashboard import regressions

    for index, value in enumerate(stepped()):
        run(services, github, index, {"step_ms": value}, chained=False)
    [case] = services.store.watch.cases(None)
    today = {"good": {"driver": "today-good"}, "bad": {"driver": "today-bad"}}
    outcome = json.dumps({"fingerprints": today, "commits": 3, "runs": 1, "reference_verdict": "unchanged"})
    services.store.watch.move(case.key, states.NOT_REPRODUCED, (states.BISECTING,), NOW, outcome=outcome)
    [row] = regressions.detail(services, None, case.key).fingerprints
    assert (row.key, row.original_good, row.today_good, row.original_bad, row.today_bad) == (
        "driver",
        "of-" + sha(20)[-4:],
        "today-good",
        "of-" + sha(21)[-4:],
        "today-bad",
    )
