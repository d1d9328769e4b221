"""The dashboard's regressions on main: the cases a viewer may see with today's GPU budget, a
case's page (a culprit, or today's fingerprints beside the original run's when not reproduced),
the same as JSON, and the links from a merge's page and the history's change points."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from bot.bootstrap import build
from bot.core.watch.cases import Span
from bot.service.records import BenchRequest, BenchResult, Merge, RegressionCase, Repository
from bot.settings import Settings
from bot.web.app import create_app
from tests.web.helpers import SECRET

PUBLIC, PRIVATE = "octo/public", "octo/private"
NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)
GOOD, BAD, CULPRIT = "a" * 40, "b" * 40, "c" * 40


def case(repo: str, state: str, good: str = GOOD, bad: str = BAD, **more) -> RegressionCase:
    span = Span(repo, "verify-step", "verify_ms", good, bad)
    return RegressionCase(
        key=span.key(),
        repo=repo,
        suite=span.suite,
        metric=span.metric,
        good_sha=good,
        bad_sha=bad,
        source="merge",
        state=state,
        installation_id=None,
        detected_at=NOW,
        **more,
    )


@pytest.fixture
def dash(tmp_path, emulator):
    settings = Settings(
        webhook_secrets=(SECRET,),
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}",
        queue_url=f"sqlite:///{tmp_path / 'queue.db'}",
        github_token="ghp_regressions",
        github_api_url=emulator.base_url,
        github_web_url=emulator.base_url,
        public_url="http://localhost",
        dashboard_anonymous="public",
    )
    runtime = build(settings)
    store = runtime.store
    store.installations.add(
        None, [Repository(1, PUBLIC, None, private=False), Repository(2, PRIVATE, None, True)]
    )
    store.dashboard.record_merge(
        Merge(
            repo=PUBLIC,
            number=12,
            title="slow copy",
            merge_sha=BAD,
            head_sha="d" * 40,
            score=80,
            level="high",
            merged_at=NOW,
        )
    )
    store.watch.open(
        case(
            PUBLIC,
            "confirmed",
            culprit_sha=CULPRIT,
            culprit_number=12,
            gpu_minutes=20.0,
            note="<script>alert(1)</script>",
            outcome=json.dumps({"commits": 3, "runs": 4}),
        )
    )
    # the merge run that found the second case kept its fingerprints with its comparison
    request, _ = store.benchmarks.open(
        BenchRequest(
            correlation_id="pb-x",
            repo=PUBLIC,
            installation_id=None,
            number=None,
            base_sha=GOOD,
            head_sha="e" * 40,
            suites=("verify-step",),
            trigger="merge",
            status="completed",
            created_at=NOW,
        )
    )
    from bot.core.bench import contract

    request, _ = store.benchmarks.open(
        BenchRequest(
            correlation_id=contract.correlation_id(contract.work_key("merge", PUBLIC, "e" * 40)),
            repo=PUBLIC,
            installation_id=None,
            number=None,
            base_sha=GOOD,
            head_sha="e" * 40,
            suites=("verify-step",),
            trigger="merge",
            status="completed",
            created_at=NOW,
        )
    )
    comparison = json.dumps({"fingerprints": {"base": {"driver": "580.1"}, "head": {"driver": "580.1"}}})
    store.benchmarks.complete(
        request,
        [
            BenchResult(
                suite="verify-step",
                base_sha=GOOD,
                head_sha="e" * 40,
                verdict="regression",
                headline_metric="verify_ms",
                headline_change=0.1,
                comparison=comparison,
                on_default_branch=True,
            )
        ],
        [],
        "run:x",
    )
    today = {"good": {"driver": "590.2"}, "bad": {"driver": "590.2"}}
    store.watch.open(
        case(PUBLIC, "not_reproduced", bad="e" * 40, outcome=json.dumps({"fingerprints": today}))
    )
    store.watch.open(case(PUBLIC, "inconclusive", bad="f" * 40, outcome=json.dumps({"fingerprints": today})))
    store.watch.open(case(PRIVATE, "out_of_budget"))
    store.watch.charge("w1", PUBLIC, "2030-01-01", "bisect", "high", 40.0, lambda spent: True, NOW, "240")
    store.watch.charge("w2", PUBLIC, "2030-01-01", "merge", "low", 5.0, lambda spent: False, NOW)
    runtime.services.now = lambda: NOW
    yield create_app(settings, runtime.services, sessions=runtime.sessions).test_client()
    runtime.close()


def test_the_list_shows_the_visible_cases_their_states_and_todays_budget(dash):
    page = dash.get("/regressions").get_data(as_text=True)
    assert "culprit confirmed" in page and "not reproduced in today&#39;s environment" in page
    assert PRIVATE not in page, "an anonymous viewer sees public repositories only"
    assert 'id="gpu-budget"' in page and "40" in page and ">1<" in page  # spent 40, one run skipped
    assert ">1200<" in page  # 20 GPU minutes
    listing = dash.get("/api/v1/regressions").get_json()
    assert {c["state"] for c in listing["cases"]} == {"confirmed", "not_reproduced", "inconclusive"}
    assert listing["budget"][PUBLIC] == {
        "spent_minutes": 40.0,
        "limit_minutes": "240",
        "skipped": 1,
        "skipped_minutes": 5.0,
    }
    assert 'data-label="Daily budget"' in page and ">240<" in page  # the limit beside the spending


def test_a_commit_filters_the_list_and_bad_filters_are_refused(dash):
    listing = dash.get(f"/api/v1/regressions?repo={PUBLIC}&sha={BAD}").get_json()
    assert [c["culprit"] for c in listing["cases"]] == [CULPRIT]
    assert dash.get("/regressions?sha=main").status_code == 400
    assert dash.get("/regressions?repo=no-owner").status_code == 400


def test_a_case_page_names_its_culprit_and_escapes_what_it_quotes(dash):
    key = case(PUBLIC, "confirmed").key
    page = dash.get(f"/regressions/{key}").get_data(as_text=True)
    assert 'id="case-culprit"' in page and CULPRIT in page and "/merges/octo/public/12" in page
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert dash.get(f"/api/v1/regressions/{key}").get_json()["gpu_seconds"] == 1200


def test_not_reproduced_shows_the_original_and_todays_fingerprints_side_by_side(dash):
    key = case(PUBLIC, "not_reproduced", bad="e" * 40).key
    page = dash.get(f"/regressions/{key}").get_data(as_text=True)
    assert 'id="fingerprints"' in page and "580.1" in page and "590.2" in page
    [row] = dash.get(f"/api/v1/regressions/{key}").get_json()["fingerprints"]
    assert row == {
        "key": "driver",
        "original": {"good": "580.1", "bad": "580.1"},
        "today": {"good": "590.2", "bad": "590.2"},
    }


def test_a_range_re_measured_without_a_decision_is_never_said_to_no_longer_differ(dash):
    page = dash.get(f"/regressions/{case(PUBLIC, 'inconclusive', bad='f' * 40).key}").get_data(as_text=True)
    assert "Re-measured without a decision" in page and "no longer differ" not in page
    assert 'id="fingerprints"' in page and "590.2" in page


def test_unknown_hidden_and_malformed_cases_are_not_found(dash):
    assert dash.get(f"/regressions/{case(PRIVATE, 'out_of_budget').key}").status_code == 404
    assert dash.get("/regressions/case-" + "0" * 32).status_code == 404
    assert dash.get("/api/v1/regressions/..%2Fx").status_code == 404


def test_a_merge_page_links_to_the_regressions_of_its_merge_commit(dash):
    page = dash.get("/merges/octo/public/12").get_data(as_text=True)
    assert (
        f"/regressions?repo=octo/public&amp;sha={BAD}" in page
        or f"/regressions?repo=octo%2Fpublic&amp;sha={BAD}" in page
    )
