"""Regressions on the default branch, through the real router on the real store with the fake
GitHub: a merge run's regression opens one case and one bisect, within the budget; a change point
across unmeasured commits opens one; a kill between the steps starts no second bisect."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bot.core.bench import contract
from bot.core.watch import cases
from bot.service import hourly, leases, watch
from bot.service.records import BenchRequest, BenchResult, MetricPoint
from bot.service.services import Services
from tests.core.judge.results_data import BASE_SHA, HEAD_SHA
from tests.service.fakes import FakeGitHub, FakeGitHubFactory, FakeQueue
from tests.service.test_bench import (
    CONFIG,
    NOW,
    REPO,
    drain,
    look_at,
    make_github,
    pull_request,
    send,
    upload_results,
    workflow_run,
)

MERGE_SHA = HEAD_SHA


@pytest.fixture
def github() -> FakeGitHub:
    return make_github()


@pytest.fixture
def services(github, sqlite_store) -> Services:
    return Services(store=sqlite_store, github=FakeGitHubFactory(github), queue=FakeQueue())


def merged(services, github, config: str = CONFIG) -> int:
    """A high-risk pull request merged and its merge run completed with a regression; the run's id."""
    github.files[(REPO, ".github/perfbot.yml", "main")] = config
    github.parents[(REPO, MERGE_SHA)] = BASE_SHA
    github.permissions[(REPO, "author")] = "read"
    services.now = lambda: NOW
    send(services, "pull_request", pull_request("opened"))
    send(
        services,
        "pull_request",
        pull_request(
            "closed",
            merged=True,
            merge_commit_sha=MERGE_SHA,
            state="closed",
            merged_at="2026-12-01T10:00:00Z",
        ),
    )
    run_id = github.dispatches[-1]["run_id"]
    upload_results(github, run_id)
    send(services, "workflow_run", workflow_run(github, run_id))
    return run_id


def bisects(github) -> list[dict]:
    return [d for d in github.dispatches if d["inputs"].get("mode") == "bisect"]


def test_a_merge_runs_regression_opens_one_case_and_dispatches_one_bisect(services, github):
    run_id = merged(services, github)
    [case] = services.store.watch.cases(None)
    assert (case.source, case.state, case.good_sha, case.bad_sha, case.number) == (
        "merge",
        "bisecting",
        BASE_SHA,
        MERGE_SHA,
        7,
    )
    [dispatched] = bisects(github)
    inputs = dispatched["inputs"]
    assert inputs == {
        "pr": "",
        "base-sha": BASE_SHA,
        "head-sha": MERGE_SHA,
        "suites": case.suite,
        "rounds": "",
        "max-rounds": "",
        "correlation-id": case.correlation_id,
        "mode": "bisect",
        "metric": case.metric,
    }
    assert case.correlation_id == contract.correlation_id(watch.bisect_key(case))
    assert case.gpu_minutes == 40.0  # 8 runs reserved at 5 minutes
    assert not any(
        c.head_sha == MERGE_SHA and c.name == "perfbot / bench" and "bisect" in (c.title or "")
        for _, c in github.checks
    )
    send(services, "workflow_run", workflow_run(github, run_id))  # the same run delivered again
    assert len(services.store.watch.cases(None)) == 1 and len(bisects(github)) == 1
    spending = services.store.watch.spending(REPO, "2026-12-01")
    assert (spending.spent, spending.skipped) == (45.0, 0)  # the merge run's 5, the bisect's 40


def test_out_of_budget_the_case_waits_and_nothing_is_dispatched(services, github):
    merged(services, github, CONFIG + "    budget: 30\n")
    [case] = services.store.watch.cases(None)
    assert case.state == "out_of_budget" and "budget" in case.note
    assert bisects(github) == []
    spending = services.store.watch.spending(REPO, "2026-12-01")
    assert (spending.spent, spending.skipped, spending.skipped_minutes) == (5.0, 1, 40.0)


def test_a_spent_budget_skips_the_merge_run_itself(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = CONFIG + "    budget: 0\n"
    github.parents[(REPO, MERGE_SHA)] = BASE_SHA
    github.permissions[(REPO, "author")] = "read"
    services.now = lambda: NOW
    send(services, "pull_request", pull_request("opened"))
    send(
        services,
        "pull_request",
        pull_request(
            "closed",
            merged=True,
            merge_commit_sha=MERGE_SHA,
            state="closed",
            merged_at="2026-12-01T10:00:00Z",
        ),
    )
    assert github.dispatches == [] and services.store.benchmarks.for_pull(REPO, None) == []
    assert services.store.watch.spending(REPO, "2026-12-01").skipped == 1


def test_with_bisecting_off_the_case_is_detected_and_stays(services, github):
    merged(services, github, CONFIG + "  watch:\n    bisect: false\n")
    [case] = services.store.watch.cases(None)
    assert case.state == "detected" and bisects(github) == []


def test_a_kill_after_the_case_moved_and_before_the_dispatch_dispatches_once_on_the_retry(
    services, github, monkeypatch
):
    from bot.service import benchmarks

    real = benchmarks.start

    def killed(services, github, request, *args):
        if request.trigger == "bisect":
            raise SystemExit("kill -9")
        return real(services, github, request, *args)

    monkeypatch.setattr(benchmarks, "start", killed)
    with pytest.raises(SystemExit):
        merged(services, github)
    [case] = services.store.watch.cases(None)
    assert case.state == "bisecting" and bisects(github) == []
    monkeypatch.setattr(benchmarks, "start", real)
    run_id = github.dispatches[-1]["run_id"]
    send(services, "workflow_run", workflow_run(github, run_id))  # the run's delivery again: no new step
    assert bisects(github) == []
    # The killed worker's dispatch job, taken over once its worker is seen dead, tried again
    for delivery_id in services.store.deliveries.release_holder(leases.owner_id()):
        services.queue.enqueue(delivery_id)
    drain(services)
    send(services, "workflow_run", workflow_run(github, run_id))
    assert len(bisects(github)) == 1 and len(services.store.watch.cases(None)) == 1


def series_point(services, sha: str, base: str, value: float, index: int) -> None:
    request = BenchRequest(
        correlation_id=f"pb-s{index}",
        repo=REPO,
        installation_id=42,
        number=None,
        base_sha=base,
        head_sha=sha,
        suites=("verify-step",),
        trigger="schedule",
        status="completed",
        created_at=NOW,
    )
    stored, _ = services.store.benchmarks.open(request)
    result = BenchResult(
        suite="verify-step",
        base_sha=base,
        head_sha=sha,
        verdict="unchanged",
        headline_metric="verify_ms",
        headline_change=0.0,
        comparison="{}",
        on_default_branch=True,
    )
    services.store.benchmarks.complete(
        stored, [result], [MetricPoint("verify-step", "verify_ms", "ms", "lower", sha, value)], f"run:{index}"
    )


QUIET = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 10.02, 9.98, 10.03, 9.97, 10.01]
STEPPED = [12.0, 12.1, 11.9, 12.0, 12.05, 11.95, 12.02]


def test_a_change_point_across_unmeasured_commits_opens_a_case_once(services, github):
    values = QUIET + STEPPED
    for index, value in enumerate(values):  # daily runs: each against its parent, days apart
        series_point(services, f"{index + 1:040x}", f"{index + 500:040x}", value, index)
    last = services.store.benchmarks.get(f"pb-s{len(values) - 1}")
    services.now = lambda: NOW
    github.files[(REPO, ".github/perfbot.yml", "main")] = CONFIG
    look_at(services, last)
    again = watch.look(services, last)  # a look cut short and tried again: nothing new
    [case] = services.store.watch.cases(None)
    assert again == watch.Looked(dispatch=(case.key,))  # its dispatch queued once already
    assert (case.source, case.good_sha, case.bad_sha) == ("changepoint", f"{12:040x}", f"{13:040x}")
    assert case.state == "bisecting" and len(bisects(github)) == 1


def test_a_cancelled_case_stops_its_bisect(services, github):
    merged(services, github)
    [case] = services.store.watch.cases(None)
    from bot.core.config.schema import load

    assert watch.cancel(services, github, case, load(CONFIG), "maintainer")
    assert not watch.cancel(services, github, case, load(CONFIG), "maintainer")
    stopped = services.store.benchmarks.get(case.correlation_id)
    assert stopped.status == "cancelled" and services.store.watch.get(case.key).state == cases.CANCELLED
    assert replace(case, state="x").state == "x"


def known_merges(services, *shas: str) -> None:
    from bot.service.records import Merge

    for number, sha in enumerate(shas, start=100):
        services.store.dashboard.record_merge(
            Merge(
                repo=REPO,
                number=number,
                title=f"pr {number}",
                merge_sha=sha,
                head_sha=f"{number:040x}",
                score=10,
                level="low",
                merged_at=NOW,
                url=f"https://github.com/{REPO}/pull/{number}",
            )
        )


def test_bench_bisect_starts_one_case_per_suite_on_known_default_branch_commits_and_cancel_stops_it(
    services, github
):
    from tests.service.test_bench import comment, replies

    good, bad = "1" * 8 + "a" * 32, "2" * 8 + "b" * 32
    known_merges(services, good, bad)
    github.parents[(REPO, bad)] = "3" * 40
    github.parents[(REPO, "3" * 40)] = good  # two commits: good..bad is bisected
    services.now = lambda: NOW
    send(
        services,
        "issue_comment",
        comment("/bench bisect 11111111 22222222 sglang-eagle3 --metric accept_len"),
    )
    [case] = services.store.watch.cases(None)
    assert (case.source, case.good_sha, case.bad_sha, case.metric, case.requested_by, case.number) == (
        "command",
        good,
        bad,
        "accept_len",
        "maintainer",
        7,
    )
    [dispatched] = bisects(github)
    assert (dispatched["inputs"]["metric"], dispatched["inputs"]["suites"]) == ("accept_len", "sglang-eagle3")
    assert "bisecting" in replies(github)[-1]
    send(services, "issue_comment", comment("/bench cancel", comment_id=502, minute=2))
    assert services.store.watch.get(case.key).state == "cancelled"
    assert services.store.benchmarks.get(case.correlation_id).status == "cancelled"


@pytest.mark.parametrize(
    "words, says",
    [
        (
            "1234567 2222222",
            "matches no commit of the default branch",
        ),  # a pull request's head is never bisected
    ],
)
def test_bench_bisect_refuses_commits_it_does_not_know_on_the_default_branch(services, github, words, says):
    from tests.service.test_bench import comment, replies

    known_merges(services, "2" * 40)
    send(services, "issue_comment", comment(f"/bench bisect {words}"))
    assert bisects(github) == [] and says in replies(github)[-1]
    assert services.store.watch.cases(None) == []


def test_without_write_access_bench_bisect_is_refused_from_the_permission_alone(services, github):
    from tests.service.test_bench import comment, replies

    known_merges(services, "1" * 40, "2" * 40)
    github.permissions[(REPO, "stranger")] = "read"
    send(services, "issue_comment", comment("/bench bisect 1111111 2222222", login="stranger"))
    assert bisects(github) == [] and "write access" in replies(github)[-1]


# ---------------------------------------------------------------- the bisect's report back


def bisecting_case(services, github, config: str = CONFIG):
    """A case of GOOD..BAD on suite 'spin' (the reader tests' report), bisecting, its run dispatched."""
    from bot.core.config.schema import load
    from tests.core.bench import test_bisect_artifact as reports

    github.files[(REPO, ".github/perfbot.yml", "main")] = config
    github.parents.update(
        {
            (REPO, reports.BAD): reports.SECOND,
            (REPO, reports.SECOND): reports.FIRST,
            (REPO, reports.FIRST): reports.GOOD,
        }
    )
    services.now = lambda: NOW
    _, [case] = watch.open_by_hand(
        services, REPO, 42, reports.GOOD, reports.BAD, ["spin"], "step_ms", "maintainer", 7
    )
    case = watch.bisect(services, github, case, load(config), "main")
    [dispatched] = bisects(github)
    return case, dispatched["run_id"]


def report_back(services, github, case, run_id, files: dict[str, bytes], conclusion: str = "success") -> None:
    from tests.core.bench.zips import archive

    github.upload_artifact(REPO, run_id, contract.artifact_name(case.correlation_id), archive(files))
    send(services, "workflow_run", workflow_run(github, run_id, conclusion=conclusion))


def test_a_confirmed_culprit_is_named_once_on_its_pull_request_with_its_kernels_and_runs(services, github):
    from tests.core.bench import test_bisect_artifact as reports

    known_merges(services, reports.SECOND)  # the culprit merged as pull request 100
    github.heads[(REPO, 100)] = "f" * 40
    case, run_id = bisecting_case(services, github, CONFIG + "  watch:\n    issue: true\n")
    report_back(services, github, case, run_id, reports.artifact(reports.culprit_report()))
    ended = services.store.watch.get(case.key)
    assert (ended.state, ended.culprit_sha, ended.culprit_number) == ("confirmed", reports.SECOND, 100)
    assert ended.gpu_minutes == 5.0 * json.loads(ended.outcome)["runs"]
    [body] = github.comments[(REPO, 100)]
    assert body.startswith(f"<!-- perfbot:regression:{case.key} -->") and reports.SECOND[:12] in body
    assert "+25" in body and "[the bisect run](" in body and "Fix PCG MoE error" in body
    assert ended.comment_url.startswith(f"https://github.com/{REPO}/pull/100#issuecomment-")
    [(title, issue)] = github.issues.values()
    assert reports.SECOND[:12] in title and body in issue
    report_back(services, github, case, run_id, reports.artifact(reports.culprit_report()))  # redelivered
    assert len(github.comments[(REPO, 100)]) == 1 and len(github.issues) == 1
    assert services.store.benchmarks.get(case.correlation_id).status == "completed"
    assert services.store.watch.spending(REPO, "2026-12-01").spent == ended.gpu_minutes


def test_a_culprit_no_pull_request_merged_is_named_on_its_commit(services, github):
    from tests.core.bench import test_bisect_artifact as reports

    case, run_id = bisecting_case(services, github)
    report_back(services, github, case, run_id, reports.artifact(reports.culprit_report()))
    [(repo, sha, body)] = github.commit_comments
    assert (repo, sha) == (REPO, reports.SECOND) and "regression" in body
    assert services.store.watch.get(case.key).comment_url.endswith("#commitcomment-1")


def test_not_reproduced_names_no_commit_and_keeps_todays_fingerprints(services, github):
    from tests.core.bench import test_bisect_artifact as reports

    case, run_id = bisecting_case(services, github)
    report_back(
        services,
        github,
        case,
        run_id,
        reports.artifact(reports.not_reproduced_report()),
        conclusion="failure",
    )  # exit 1: an outcome, not an error
    ended = services.store.watch.get(case.key)
    assert (ended.state, ended.culprit_sha) == ("not_reproduced", None)
    assert json.loads(ended.outcome)["fingerprints"]["good"]
    assert github.commit_comments == [] and github.issues == {}


def test_a_report_of_other_commits_fails_the_case_and_names_nobody(services, github):
    from tests.core.bench import test_bisect_artifact as reports

    case, run_id = bisecting_case(services, github)
    forged = reports.culprit_report()
    forged["good"] = "e" * 40
    report_back(services, github, case, run_id, reports.artifact(forged))
    ended = services.store.watch.get(case.key)
    assert ended.state == "failed" and ended.note and github.commit_comments == []


def test_the_hourly_sweep_bisects_a_case_skipped_for_the_budget_once_a_new_day_allows_it(services, github):
    from datetime import timedelta

    from bot.service.records import Repository

    merged(services, github, CONFIG + "    budget: 44\n")  # the merge run's 5 leave 39: less than 40
    [case] = services.store.watch.cases(None)
    services.store.installations.replace(42, [Repository(1, REPO, 42)])
    hourly.sweep(services)
    assert services.store.watch.get(case.key).state == "out_of_budget" and bisects(github) == []
    services.now = lambda: NOW + timedelta(days=1)
    hourly.sweep(services)
    hourly.sweep(services)
    assert services.store.watch.get(case.key).state == "bisecting" and len(bisects(github)) == 1
    assert services.store.watch.spending(REPO, "2026-12-02").spent == 40.0


def test_the_hourly_sweep_dispatches_a_bisect_whose_delivery_gave_up_before_github_heard_of_it(
    services, github, monkeypatch
):
    from bot.service import benchmarks
    from bot.service.records import Repository

    real = benchmarks.start

    def killed(services, github, request, *args):
        if request.trigger == "bisect":
            raise SystemExit("kill -9")
        return real(services, github, request, *args)

    monkeypatch.setattr(benchmarks, "start", killed)
    with pytest.raises(SystemExit):
        merged(services, github)
    monkeypatch.setattr(benchmarks, "start", real)
    services.store.installations.replace(42, [Repository(1, REPO, 42)])
    hourly.sweep(services)
    hourly.sweep(services)
    [case] = services.store.watch.cases(None)
    assert case.state == "bisecting" and len(bisects(github)) == 1


def test_a_culprit_github_does_not_place_in_the_range_is_never_named(services, github):
    """The report is written where the code under test ran, its list of commits too: an older
    innocent commit named as the culprit got a public comment and an issue before."""
    from tests.core.bench import test_bisect_artifact as reports

    known_merges(services, reports.SECOND)
    case, run_id = bisecting_case(services, github, CONFIG + "  watch:\n    issue: true\n")
    github.parents[(REPO, reports.BAD)] = reports.FIRST  # SECOND is not on the way from BAD to GOOD
    report_back(services, github, case, run_id, reports.artifact(reports.culprit_report()))
    ended = services.store.watch.get(case.key)
    assert (ended.state, ended.culprit_sha) == ("failed", None) and "does not place" in ended.note
    assert github.comments.get((REPO, 100), []) == [] and github.issues == {} and github.commit_comments == []


def test_a_maintainer_dismisses_a_case_its_bisect_stops_and_its_reserve_comes_back(services, github):
    from tests.service.test_bench import comment, replies

    merged(services, github)
    [case] = services.store.watch.cases(None)
    assert case.state == "bisecting"
    send(services, "issue_comment", comment(f"/bench dismiss {case.key[:13]} runner noise", comment_id=601))
    ended = services.store.watch.get(case.key)
    assert ended.state == cases.DISMISSED and ended.note == "dismissed by maintainer: runner noise"
    assert services.store.benchmarks.get(case.correlation_id).status == "cancelled"
    assert services.store.watch.spending(REPO, "2026-12-01").spent == 5.0  # the merge run's alone
    assert "Dismissed" in replies(github)[-1] and case.suite in replies(github)[-1]
    send(services, "issue_comment", comment(f"/bench dismiss {case.key}", comment_id=602, minute=3))
    assert "has ended already (dismissed by a maintainer)" in replies(github)[-1]
    send(services, "issue_comment", comment("/bench dismiss case-00000000", comment_id=603, minute=6))
    assert "no regression case" in replies(github)[-1]
