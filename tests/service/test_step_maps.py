"""The App's per-step map: stored from a completed default-branch run's results, and read when a
pull request is reviewed."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bot.core import stepmap
from bot.service import step_maps
from bot.service.records import BenchRequest, StoredStepMap
from tests.core.judge.results_data import BASE_SHA, EAGLE3, HEAD_SHA, document
from tests.service import test_bench
from tests.service.test_bench import NOW, REPO, pull_request, send, upload_results, workflow_run

# The benchmark flows' fake GitHub and services, as fixtures here too.
github = test_bench.github
services = test_bench.services

GLUE = "engine/glue.py"
GLUE_BASE = (
    "def shuffle(x):\n    return x\n\n\ndef helper(x):\n    return x\n\n\ndef run(x):\n    return helper(x)\n"
)
GLUE_DIFF = f"""\
diff --git a/{GLUE} b/{GLUE}
--- a/{GLUE}
+++ b/{GLUE}
@@ -4,3 +4,3 @@ def shuffle(x):
{" "}
 def helper(x):
-    return x
+    return x[::-1]
"""


def map_data(commit: str, suite: str = "sglang-eagle3", function: str = "run") -> dict:
    return {
        "schema": 1,
        "commit": commit,
        "suite": suite,
        "step": "decode step",
        "steps": 8,
        "source": "torch.profiler",
        "kernels": [],
        "functions": [
            {"path": GLUE, "function": function, "line": 9, "calls_per_step": 4, "host_share": 0.1}
        ],
    }


def merged(services, github, results: dict) -> None:
    github.parents[(REPO, HEAD_SHA)] = BASE_SHA
    github.permissions[(REPO, "author")] = "read"
    send(services, "pull_request", pull_request("opened"))
    send(
        services,
        "pull_request",
        pull_request(
            "closed", merged=True, merge_commit_sha=HEAD_SHA, state="closed", merged_at="2026-12-01T10:00:00Z"
        ),
    )
    run_id = github.dispatches[-1]["run_id"]
    upload_results(github, run_id, results)
    send(services, "workflow_run", workflow_run(github, run_id))


def test_a_merge_runs_map_of_its_commit_is_stored_with_the_default_branch(services, github):
    merged(services, github, {**document(EAGLE3), "step_map": map_data(HEAD_SHA)})
    stored = services.store.benchmarks.step_map(REPO)
    assert stored == StoredStepMap(REPO, "main", stepmap.parse(map_data(HEAD_SHA)))


def test_the_map_of_the_runs_base_is_stored_too(services, github):
    merged(services, github, {**document(EAGLE3), "step_map": map_data(BASE_SHA)})
    stored = services.store.benchmarks.step_map(REPO)
    assert stored is not None and stored.step_map.commit == BASE_SHA


@pytest.mark.parametrize("broken", [map_data("9" * 40), {"schema": 1, "commit": "zz"}])
def test_a_map_of_another_commit_or_one_that_does_not_read_is_not_stored(services, github, broken):
    # The results file holding it is no results file either: the run is reported as failed.
    merged(services, github, {**document(EAGLE3), "step_map": broken})
    assert services.store.benchmarks.step_map(REPO) is None
    [request] = services.store.benchmarks.for_pull(REPO, None)
    assert request.status == "failed" and "step_map" in (request.error or "")


def test_a_pull_requests_run_stores_no_map(services, github):
    send(
        services,
        "issue_comment",
        {
            "action": "created",
            "installation": {"id": 42},
            "repository": {"full_name": REPO, "default_branch": "main"},
            "issue": {"number": 7, "pull_request": {}},
            "comment": {
                "id": 501,
                "body": "/bench",
                "user": {"login": "maintainer", "type": "User"},
                "author_association": "MEMBER",
                "created_at": "2026-12-01T10:00:00Z",
            },
        },
    )
    run_id = github.dispatches[-1]["run_id"]
    upload_results(github, run_id, {**document(EAGLE3), "step_map": map_data(HEAD_SHA)})
    send(services, "workflow_run", workflow_run(github, run_id))
    assert services.store.benchmarks.for_pull(REPO, 7)[0].status == "completed"
    assert services.store.benchmarks.step_map(REPO) is None


def store_map(services, commit: str = "c" * 40, **extra: object) -> None:
    request, _ = services.store.benchmarks.open(_merge_request())
    done = replace(request, status="completed", conclusion="success")
    assert services.store.benchmarks.complete(
        done, [], [], "run:x", [StoredStepMap(REPO, "main", stepmap.parse({**map_data(commit), **extra}))]
    )


def _merge_request() -> BenchRequest:
    return BenchRequest(
        correlation_id="pb-map",
        repo=REPO,
        installation_id=42,
        number=None,
        base_sha=BASE_SHA,
        head_sha="c" * 40,
        suites=("sglang-eagle3",),
        rounds=5,
        max_rounds=None,
        trigger="merge",
        requested_by="#1",
        comment_id=None,
        status="requested",
        created_at=NOW,
    )


def test_a_review_reads_the_stored_map_and_the_source_at_its_commit(services, github):
    github.diffs[(REPO, 7)] = GLUE_DIFF
    github.files[(REPO, GLUE, "c" * 40)] = GLUE_BASE
    send(services, "pull_request", pull_request("opened"))
    before = services.store.reviews.get(REPO, 7)
    assert not any("decode step" in reason.text for reason in before.reasons)
    store_map(services)
    send(services, "pull_request", pull_request("synchronize", minute=1))
    after = services.store.reviews.get(REPO, 7)
    assert any(
        reason.text.startswith(
            "called from run(), which runs 4 times per decode step, 10% of its host "
            "time, measured on main at ccccccc"
        )
        for reason in after.reasons
    )
    assert after.score > before.score


def test_without_the_source_at_the_maps_commit_only_the_map_judges(services, github):
    store_map(services)
    github.diffs[(REPO, 7)] = GLUE_DIFF.replace("def shuffle(x):", "def run(x):")
    evidence = step_maps.evidence(services, github, REPO, [GLUE])
    assert evidence is not None and evidence.graph is not None and evidence.graph.functions == ()
    assert evidence.judge(GLUE, "helper", ["    return x"]) is None
    assert evidence.judge(GLUE, "run", []).rule == "map.per-step"  # type: ignore[union-attr]


def test_the_changed_paths_of_a_diff_come_first_and_once():
    diff = GLUE_DIFF + GLUE_DIFF.replace(GLUE, "b.py") + GLUE_DIFF + "+++ b/with space.py \n"
    assert step_maps.changed_paths(diff) == [GLUE, "b.py", "with space.py"]
    assert json.dumps(step_maps.changed_paths("")) == "[]"


def test_with_the_diff_the_stored_maps_lines_judge_whether_the_changed_lines_ran(services, github):
    github.files[(REPO, GLUE, "c" * 40)] = GLUE_BASE
    store_map(services, lines={GLUE: [[10, 10]]})  # run() ran; helper's line 6 did not
    cold = step_maps.evidence(services, github, REPO, [GLUE], GLUE_DIFF)
    assert cold is not None and cold.judge(GLUE, "helper", ["    return x"]).rule == "map.off-step"  # type: ignore[union-attr]
    by_function = step_maps.evidence(services, github, REPO, [GLUE])
    assert by_function is not None and by_function.judge(GLUE, "helper", []).rule == "map.reaches"  # type: ignore[union-attr]


def test_a_changed_line_the_stored_maps_steps_ran_keeps_the_per_step_verdict(services, github):
    github.files[(REPO, GLUE, "c" * 40)] = GLUE_BASE
    store_map(services, lines={GLUE: [[6, 6], [10, 10]]})
    ran = step_maps.evidence(services, github, REPO, [GLUE], GLUE_DIFF)
    assert ran is not None and ran.judge(GLUE, "helper", []).rule == "map.reaches"  # type: ignore[union-attr]


def test_a_review_judges_by_the_maps_lines_a_change_no_step_ran(services, github):
    """The review passed no diff to the map, so a map's lines were never read by the App."""
    github.diffs[(REPO, 7)] = GLUE_DIFF
    github.files[(REPO, GLUE, "c" * 40)] = GLUE_BASE
    store_map(services, lines={GLUE: [[10, 10]]})  # run() ran; helper's changed line 6 did not
    send(services, "pull_request", pull_request("opened"))
    review = services.store.reviews.get(REPO, 7)
    assert not any(reason.text.startswith("called from run(), which runs") for reason in review.reasons)
    assert [reason.rule for reason in review.reasons] == ["size"]  # judged as set-up: no map reason
