"""The watch's chain of jobs (`bot.service.chain`, `bot.service.steps`) on the real store and router
with the fake GitHub: a step is one job however often it is queued; the web can never queue one;
a stored step that does not read is refused as malformed, never run; a bisect's reserve comes back
when its case was cancelled, or superseded with its release cut short; a confirmed culprit whose
announcement failed for good is named by the hourly sweep."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.bench import contract
from bot.core.watch import cases
from bot.service import chain, hourly, intake, jobs, watch
from bot.service.events import MalformedPayload
from bot.service.records import Repository
from bot.service.routes import ROUTER
from bot.service.services import Services
from tests.service.fakes import FakeGitHub, FakeGitHubFactory, FakeQueue
from tests.service.test_bench import REPO, comment, drain, make_github, send, workflow_run
from tests.service.test_watch import bisecting_case, report_back

DAY = "2026-12-01"


@pytest.fixture
def github() -> FakeGitHub:
    return make_github()


@pytest.fixture
def services(github, sqlite_store) -> Services:
    return Services(store=sqlite_store, github=FakeGitHubFactory(github), queue=FakeQueue())


def look(subject: str = "pb-1") -> chain.Step:
    return chain.Step(
        action=chain.LOOK, repo=REPO, installation_id=42, default_branch="main", subject=subject
    )


def test_a_step_queued_twice_is_one_job(services):
    assert chain.queue(services, look()) is True
    assert chain.queue(services, look()) is False  # a replay, or a retry after a kill
    assert chain.queue(services, look("pb-2")) is True
    assert len(services.queue.jobs) == 2
    stored = services.store.deliveries.start(services.queue.jobs[0], 60)
    assert (stored.event, stored.action) == (chain.EVENT, "look")
    assert chain.parse(json.loads(stored.payload)) == look()


def test_the_web_cannot_queue_the_bots_own_jobs(services):
    payload = {**json.loads(json.dumps(look().__dict__)), "action": "dispatch"}
    outcome = intake.accept(
        services, ROUTER, hook_id="1", guid="g-1", event=chain.EVENT, payload=payload, body=b"{}"
    )
    assert outcome is intake.Outcome.IGNORED and services.queue.jobs == []
    assert chain.EVENT not in ROUTER.events()  # and the App never subscribes to it


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.dictionaries(
        st.sampled_from(["action", "repo", "installation_id", "default_branch", "subject", "x"]),
        st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.lists(st.integers(), max_size=2),
    )
)
def test_a_stored_step_that_does_not_read_is_malformed_never_run(payload):
    try:
        step = chain.parse(payload)
    except MalformedPayload:
        return
    assert step.action in ("look", "dispatch", "release", "announce") and step.repo and step.subject


def test_a_cancelled_bisect_gives_its_reserve_back(services, github):
    case, _ = bisecting_case(services, github)
    assert services.store.watch.spending(REPO, DAY).spent > 0
    send(services, "issue_comment", comment("/bench cancel", comment_id=611))
    assert services.store.watch.get(case.key).state == cases.CANCELLED
    assert services.store.benchmarks.get(case.correlation_id).status == "cancelled"
    assert services.store.watch.spending(REPO, DAY).spent == 0.0


def test_a_superseded_bisect_that_reports_gives_its_reserve_back_though_its_release_was_lost(
    services, github
):
    from tests.core.bench import test_bisect_artifact as reports

    case, run_id = bisecting_case(services, github)
    wider = replace(
        case, key="case-wider", good_sha="0" * 40, state=cases.DETECTED, correlation_id=None, run_url=None
    )
    services.store.watch.supersede(case.key, wider)
    assert services.store.watch.get(case.key).state == cases.SUPERSEDED
    # the release job never ran (a kill between the look's write and its queueing); the bisect reports
    report_back(services, github, case, run_id, reports.artifact(reports.culprit_report()))
    assert services.store.watch.spending(REPO, DAY).spent == 0.0
    assert services.store.watch.get(case.key).state == cases.SUPERSEDED  # nothing named


def test_the_hourly_sweep_names_a_culprit_whose_announcement_failed_for_good(services, github, monkeypatch):
    from tests.core.bench import test_bisect_artifact as reports

    case, run_id = bisecting_case(services, github)
    real = watch.announce

    def down(*args):
        raise RuntimeError("GitHub is down")

    monkeypatch.setattr(watch, "announce", down)
    monkeypatch.setattr(jobs, "MAX_ATTEMPTS", 1)
    from tests.core.bench.zips import archive

    name = contract.artifact_name(case.correlation_id)
    github.upload_artifact(REPO, run_id, name, archive(reports.artifact(reports.culprit_report())))
    ROUTER.dispatch("workflow_run", workflow_run(github, run_id), services)
    drain(services, failures=1)  # the announcement, tried its one time
    ended = services.store.watch.get(case.key)
    assert ended.state == cases.CONFIRMED and ended.comment_url is None
    monkeypatch.setattr(watch, "announce", real)
    services.store.installations.add(42, [Repository(1, REPO, 42)])
    hourly.sweep(services)
    named = services.store.watch.get(case.key)
    assert named.comment_url is not None
    hourly.sweep(services)  # named: the next sweep leaves it
    assert services.store.watch.get(case.key).comment_url == named.comment_url


@pytest.mark.parametrize(
    "change",
    [
        {"action": "bisect"},
        {"repo": ""},
        {"repo": ["o/r"]},
        {"default_branch": 7},
        {"subject": None},
        {"installation_id": "42"},
        {"installation_id": True},
    ],
)
def test_each_field_of_a_stored_step_is_checked(change):
    good = {**look().__dict__}
    assert chain.parse(good) == look()
    assert chain.parse({**good, "installation_id": None}).installation_id is None
    with pytest.raises(MalformedPayload):
        chain.parse({**good, **change})
