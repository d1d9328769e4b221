"""The copy of GitHub's examples that the product carries is the one the pinned packages hold, and
the payloads built from it pass GitHub's webhook schemas."""

from __future__ import annotations

import json

from bot.sandbox import examples, payloads


def test_the_carried_examples_are_those_of_the_pinned_packages(github_test_data):
    assert json.loads(examples.DATA.read_text()) == github_test_data.vendored(), (
        "bot/sandbox/github_examples.json is stale: python -m tests.support.github_data --vendor"
    )


def test_the_payloads_built_from_them_pass_githubs_schemas(github_test_data):
    run = {
        "id": 7,
        "display_title": "perfbot bench x",
        "event": "workflow_dispatch",
        "path": ".github/workflows/perfbot-bench.yml",
        "status": "completed",
        "conclusion": "success",
        "run_attempt": 1,
        "html_url": "https://github.com/o/r/actions/runs/7",
        "head_sha": "a" * 40,
        "head_branch": "main",
    }
    built = {
        "pull_request": [
            payloads.pull_request(action, head_sha="b" * 40, number=3, repo="o/r", installation_id=1)
            for action in ("opened", "synchronize", "closed", "edited")
        ],
        "issue_comment": [
            payloads.issue_comment(
                "/bench", number=3, repo="o/r", installation_id=1, login="m", comment_id=9, app_id=5
            )
        ],
        "pull_request_review": [
            payloads.pull_request_review(
                "/bench", number=3, repo="o/r", installation_id=1, login="m", review_id=4
            )
        ],
        "workflow_run": [
            payloads.workflow_run(action, run, repo="o/r", installation_id=1)
            for action in ("requested", "in_progress", "completed")
        ],
        "installation": [payloads.installation_event("installation", "created")],
        "installation_repositories": [payloads.installation_event("installation_repositories", "added")],
    }
    for event, found in built.items():
        for payload in found:
            assert github_test_data.schema_errors(event, payload) == [], (event, payload.get("action"))
