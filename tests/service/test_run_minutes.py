"""The budget counts the runner time a run took once GitHub says it (the workflow run's start and
last update), not the estimate it was charged at: a merge run, a bisect; times missing, unreadable
or out of order keep the estimate and never refuse the delivery."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.service import events
from bot.service.services import Services
from tests.service.fakes import FakeGitHub, FakeGitHubFactory, FakeQueue
from tests.service.test_bench import CONFIG, REPO, drain, make_github, workflow_run
from tests.service.test_watch import bisecting_case, merged

DAY = "2026-12-01"


@pytest.fixture
def github() -> FakeGitHub:
    return make_github()


@pytest.fixture
def services(github, sqlite_store) -> Services:
    return Services(store=sqlite_store, github=FakeGitHubFactory(github), queue=FakeQueue())


def timed(payload: dict, started: object, updated: object) -> dict:
    payload["workflow_run"].update(run_started_at=started, updated_at=updated)
    return payload


def test_a_merge_runs_charge_is_settled_to_the_time_its_run_took(services, github, monkeypatch):
    real = workflow_run

    def taking_17_minutes(github, run_id, **kw):
        return timed(real(github, run_id, **kw), "2026-12-01T10:00:00Z", "2026-12-01T10:17:30Z")

    monkeypatch.setattr("tests.service.test_watch.workflow_run", taking_17_minutes)
    merged(services, github, CONFIG + "  watch:\n    bisect: false\n")
    assert services.store.watch.spending(REPO, DAY).spent == 17.5  # charged at 5 minutes


def test_a_bisects_charge_is_settled_to_the_time_its_run_took(services, github):
    from bot.core.bench import contract
    from bot.service.routes import ROUTER
    from tests.core.bench import test_bisect_artifact as reports
    from tests.core.bench.zips import archive

    case, run_id = bisecting_case(services, github)
    name = contract.artifact_name(case.correlation_id)
    github.upload_artifact(REPO, run_id, name, archive(reports.artifact(reports.culprit_report())))
    payload = timed(workflow_run(github, run_id), "2026-12-01T10:00:00Z", "2026-12-01T10:12:00Z")
    ROUTER.dispatch("workflow_run", payload, services)
    drain(services)
    ended = services.store.watch.get(case.key)
    assert ended.state == "confirmed" and ended.gpu_minutes == 12.0
    assert services.store.watch.spending(REPO, DAY).spent == 12.0  # reserved at 40


@pytest.mark.parametrize(
    ("started", "updated"),
    [
        (None, None),
        ("2026-12-01T10:00:00Z", None),
        ("yesterday", "2026-12-01T10:00:00Z"),
        ("2026-12-01T10:30:00Z", "2026-12-01T10:00:00Z"),  # out of order
        ("2026-12-01T10:00:00", "2026-12-01T10:05:00Z"),  # one without its zone
        (12, ["x"]),
    ],
)
def test_times_github_did_not_give_keep_the_estimate_and_the_delivery(services, github, started, updated):
    case, run_id = bisecting_case(services, github)
    from bot.core.bench import contract
    from bot.service.routes import ROUTER
    from tests.core.bench import test_bisect_artifact as reports
    from tests.core.bench.zips import archive

    name = contract.artifact_name(case.correlation_id)
    github.upload_artifact(REPO, run_id, name, archive(reports.artifact(reports.culprit_report())))
    assert ROUTER.dispatch("workflow_run", timed(workflow_run(github, run_id), started, updated), services)
    drain(services)
    ended = services.store.watch.get(case.key)
    assert ended.state == "confirmed" and ended.gpu_minutes == 5.0 * 4  # the runs made, estimated


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a loaded machine, not the code
@given(
    st.one_of(st.none(), st.text(max_size=30), st.integers()),
    st.one_of(st.none(), st.text(max_size=30), st.lists(st.integers(), max_size=2)),
)
def test_any_times_give_a_length_or_none_never_an_error(started, updated):
    parsed = events._WorkflowRun(id=1, event="workflow_dispatch", run_started_at=started, updated_at=updated)
    minutes = events._minutes(parsed)
    assert minutes is None or 0 <= minutes <= 35 * 1440
