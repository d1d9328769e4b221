"""The watch of the default branch end to end, as streams of runs rather than one scenario: days
of scheduled runs and pull requests merged one after another, every run's results artifact back
through GitHub's `workflow_run` event, each case's bisect dispatched and its report read back, all
real but GitHub (the emulator, every request validated against GitHub's REST description) and the
GPU runner (`tests.emulator.watch_streams` plays it). The streams are seeded: each test sees the
same points every time."""

from __future__ import annotations

import pytest

from tests.core.judge.results_data import FINGERPRINT
from tests.emulator import live
from tests.emulator.watch_streams import (
    CONFIG,
    TODAYS_DRIVER,
    Main,
    culprit_report,
    no_culprit_report,
    noisy,
    stepped,
)
from tests.service import diffs


@pytest.fixture
def main(emulator, database_url, tmp_path, app_key):
    state = live.add_repository(emulator, CONFIG, {"maintainer": "write"})
    running = live.start(
        emulator, database_url, f"sqlite:///{tmp_path / 'queue.db'}", app_key, periodic=False
    )
    yield Main.start(running, emulator, state)
    running.stop()


def test_one_step_in_daily_runs_is_one_case_one_bisect_and_one_culprit_named_on_its_pull_request(main):
    """+8% at CV 1%, one scheduled run a day: the old watch opened a case at the 3rd, 4th and 5th
    point of the new level, each a span too early, and bisected each."""
    values = stepped(n=22, at=14, seed=1)
    for value in values[:14]:
        main.daily({"step_ms": value})
    good = main.head
    number, [inner], culprit = main.merge(diffs.MEDIUM)  # recorded, not measured (below on_merge)
    main.commit("d")
    bad = main.head
    main.complete(main.scheduled(), {"step_ms": (values[14], values[14])})
    for value in values[15:]:
        main.daily({"step_ms": value})
    [case] = main.bot.runtime.store.watch.cases(None)
    assert (case.state, case.good_sha, case.bad_sha, case.metric) == ("bisecting", good, bad, "step_ms")
    [bisect] = main.bisects()
    assert (bisect["inputs"]["base-sha"], bisect["inputs"]["head-sha"]) == (good, bad)
    main.report_back(bisect, culprit_report(good, bad, [inner, culprit, bad], culprit, "step_ms"))
    ended = main.bot.runtime.store.watch.get(case.key)
    assert (ended.state, ended.culprit_sha, ended.culprit_number) == ("confirmed", culprit, number)
    [comment] = main.culprit_comments()
    assert comment in main.emulator.comments_on(live.REPO, number)
    main.daily({"step_ms": values[-1]})  # the stream goes on: nothing more
    assert len(main.bisects()) == 1 and len(main.bot.runtime.store.watch.cases(None)) == 1


@pytest.mark.slow  # 22 pull requests reviewed, merged and measured: about 40 s
def test_every_merge_measured_and_the_slow_ones_own_run_inconclusive_the_step_is_found(main):
    """Each merge run measures its merge against the one before (3 rounds a side at 4% scatter):
    the slow merge's own run is inconclusive, and the old watch, leaving a one-commit span to that
    run's verdict, never opened a case although the series shows the step. The bisect goes into
    the slow pull request's own commit: the culprit is named on that pull request, once."""
    values = stepped(n=22, at=14, step=0.058, seed=4)
    merges, verdicts = [], []
    before = values[0]
    main.commit("e")
    for value in values:
        number, pushed, merge = main.merge()
        if len(merges) == 14:
            slow, [culprit] = number, pushed
        [run] = [d for d in main.emulator.dispatches if d["inputs"]["head-sha"] == merge]
        main.complete(run, {"step_ms": (before, value)}, scatter=0.04)
        request = main.bot.runtime.store.benchmarks.get(run["inputs"]["correlation-id"])
        verdicts += [r.verdict for r in main.bot.runtime.store.benchmarks.results(request.id)]
        merges.append(merge)
        before = value
    assert verdicts[14] == "inconclusive", verdicts
    [case] = main.bot.runtime.store.watch.cases(None)
    assert (case.good_sha, case.bad_sha, case.metric) == (merges[13], merges[14], "step_ms")
    [bisect] = main.bisects()
    assert (bisect["inputs"]["base-sha"], bisect["inputs"]["head-sha"]) == (merges[13], merges[14])
    main.report_back(
        bisect, culprit_report(merges[13], merges[14], [culprit, merges[14]], culprit, "step_ms")
    )
    ended = main.bot.runtime.store.watch.get(case.key)
    assert (ended.state, ended.culprit_sha, ended.culprit_number) == ("confirmed", culprit, slow)
    [comment] = main.culprit_comments()
    assert comment in main.emulator.comments_on(live.REPO, slow)


@pytest.mark.slow  # 24 days of two metrics: about 20-25 s
def test_a_noisy_second_metric_neither_hides_the_stable_metrics_step_nor_opens_a_case(main):
    """A serving-like suite: a heavy-tailed p99 beside a clean +8% step. The old watch followed
    whichever metric had the worst verdict of each run, the noisy one, and never opened a case."""
    step, p99 = stepped(n=24, at=16, seed=2), noisy(24, seed=3)
    for index in range(24):
        main.daily({"p99_ms": p99[index], "step_ms": step[index]})
        if index == 15:
            good = main.head
        if index == 16:
            bad = main.head
    [case] = main.bot.runtime.store.watch.cases(None)
    assert (case.metric, case.good_sha, case.bad_sha) == ("step_ms", good, bad)
    assert [d["inputs"]["metric"] for d in main.bisects()] == ["step_ms"]


def test_a_metric_name_a_results_file_accepts_is_bisected_and_wedges_nothing(main):
    """A parametrised test's name, 100 characters with '@' and '+': the old dispatch refused it
    after the case was moved to bisecting and charged; the merge run's delivery then failed each
    time and the hourly task raised before the scheduled run, for good."""
    name = "test_attn_bf16+causal@sm90-" + "x" * 73
    assert len(name) == 100
    values = stepped(n=21, at=14, seed=7)
    for value in values:
        main.daily({name: value})
    [case] = main.bot.runtime.store.watch.cases(None)
    assert case.state == "bisecting"
    [bisect] = main.bisects()
    assert bisect["inputs"]["metric"] == name and bisect["inputs"]["correlation-id"] == case.correlation_id
    assert main.bot.runtime.store.deliveries.counts().get("failed", 0) == 0
    main.daily({name: values[-1]})  # the next day's scheduled run is started and read back
    main.daily({name: values[-2]})
    assert len(main.bisects()) == 1


def test_a_change_point_re_measured_without_a_decision_says_so_beside_the_runs_that_found_it(main):
    """The bisect measured GOOD against BAD again and its runs decided nothing: the case's page said
    they "no longer differ", and showed no fingerprints of the runs that found a change point (only
    a merge run's were looked up)."""
    values = stepped(n=21, at=14, seed=5)
    for value in values:
        main.daily({"step_ms": value})
    bisect = main.bisects()[0]  # (one step, one bisect: the first test's business)
    case = main.bot.runtime.store.watch.by_correlation(bisect["inputs"]["correlation-id"])
    assert case is not None and case.source == "changepoint"
    main.report_back(bisect, no_culprit_report(case.good_sha, case.bad_sha, 2, "step_ms"), "failure")
    ended = main.bot.runtime.store.watch.get(case.key)
    assert (ended.state, ended.culprit_sha) == ("inconclusive", None)
    assert main.culprit_comments() == []
    page = main.bot.client.get(f"/regressions/{case.key}").get_data(as_text=True)
    assert "no longer differ" not in page and "without the runs deciding" in page
    [driver] = [row for row in page.split("<tr>") if "<code>driver</code>" in row]
    cells = [cell.split("</td>")[0] for cell in driver.split("<td>")[2:]]
    assert cells == [FINGERPRINT["driver"], FINGERPRINT["driver"], FINGERPRINT["driver"], TODAYS_DRIVER], (
        cells
    )
