"""Webhook payloads as GitHub sends them, built from GitHub's own examples (`examples.py`) and
pointed at a repository, a pull request, a comment or a workflow run: what the sandbox delivers
and what `perfbot deliver --pull-request` builds. The tests check each against GitHub's webhook
schemas (tests/support/github_data.py)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

from .examples import webhook_example

EXAMPLE_REPO = "Codertocat/Hello-World"  # the repository of the pull request and comment examples
ACTIONS_EXAMPLE_REPO = "octo-org/octo-repo"  # the workflow_run example's
INSTALLATION_NODE = "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="

Payload = dict[str, Any]


def pull_request(
    action: str,
    *,
    head_sha: str | None = None,
    number: int | None = None,
    repo: str | None = None,
    installation_id: int | None = None,
    **changes: Any,
) -> Payload:
    """A `pull_request` event with ``action``, from the `opened` example. ``changes``: ``merged``
    (for `closed`, default true) and ``changes`` (for `edited`)."""
    payload = _retarget(webhook_example("pull_request", "opened"), head_sha, number, repo, installation_id)
    payload["action"] = action
    pr = payload["pull_request"]
    for side in ("base", "head"):  # newer schemas require it; the 2019-era example predates it
        pr[side]["repo"].setdefault("has_discussions", False)
    if action == "synchronize":
        payload["before"], payload["after"] = "0" * 40, pr["head"]["sha"]
    elif action == "edited":
        payload["changes"] = changes.get("changes") or {
            "base": {"ref": {"from": "old-base"}, "sha": {"from": "1" * 40}}
        }
    elif action == "closed":
        merged = changes.get("merged", True)
        pr.update(
            state="closed",
            closed_at="2026-11-30T01:00:00Z",
            merged=merged,
            merged_at="2026-11-30T01:00:00Z" if merged else None,
            merge_commit_sha="c" * 40 if merged else None,
        )
        if merged:
            pr["merged_by"] = copy.deepcopy(pr["user"])
    return payload


def _retarget(
    payload: Payload, head_sha: str | None, number: int | None, repo: str | None, installation_id: int | None
) -> Payload:
    pr = payload["pull_request"]
    if head_sha:
        pr["head"]["sha"] = head_sha
    if installation_id is not None:
        payload["installation"] = {"id": installation_id, "node_id": INSTALLATION_NODE}
    text = json.dumps(payload)
    if repo:
        text = text.replace(EXAMPLE_REPO, repo)
    if number is not None:
        text = (
            text.replace(f"/pulls/{pr['number']}", f"/pulls/{number}")
            .replace(f"/pull/{pr['number']}", f"/pull/{number}")
            .replace(f"/issues/{pr['number']}", f"/issues/{number}")
        )
    payload = json.loads(text)
    if number is not None:
        payload["number"] = payload["pull_request"]["number"] = number
    return payload


def installation_event(event: str, action: str) -> Payload:
    """GitHub's `installation` or `installation_repositories` example, brought up to the current
    schema (timestamps as ISO strings, ``app_slug``)."""
    found = webhook_example(event, action)
    inst = found["installation"]
    for key in ("created_at", "updated_at"):
        if isinstance(inst.get(key), int):
            inst[key] = datetime.fromtimestamp(inst[key], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    inst.setdefault("app_slug", "perfbot")
    if event == "installation_repositories":
        inst.setdefault("suspended_by", None)
        inst.setdefault("suspended_at", None)
        found.setdefault("requester", None)
    return found


def issue_comment(
    body: str,
    *,
    number: int,
    repo: str,
    installation_id: int,
    login: str,
    comment_id: int,
    user_type: str = "User",
    on_pull_request: bool = True,
    app_id: int | None = None,
) -> Payload:
    """A comment ``created`` on pull request (or issue) ``number``, from the example (GitHub's
    comment examples are all on issues: a pull request's comment differs by ``issue.pull_request``)."""
    payload = json.loads(json.dumps(webhook_example("issue_comment", "created")).replace(EXAMPLE_REPO, repo))
    payload["installation"]["id"] = installation_id
    issue, comment = payload["issue"], payload["comment"]
    issue["number"] = number
    if on_pull_request:
        issue["pull_request"] = pull_request_link(repo, number)
    comment.update(id=comment_id, body=body)
    comment["user"] = {**comment["user"], "login": login, "type": user_type}
    if app_id is not None:
        app = webhook_example("check_run")["check_run"]["app"]  # an App as webhooks describe one
        comment["performed_via_github_app"] = {**app, "id": app_id}
    return payload


def pull_request_link(
    repo: str, number: int, web: str = "https://github.com", api: str = "https://api.github.com"
) -> dict[str, Any]:
    """``issue.pull_request`` of an issue that is a pull request."""
    return {
        "url": f"{api}/repos/{repo}/pulls/{number}",
        "html_url": f"{web}/{repo}/pull/{number}",
        "diff_url": f"{web}/{repo}/pull/{number}.diff",
        "patch_url": f"{web}/{repo}/pull/{number}.patch",
        "merged_at": None,
    }


def pull_request_review(
    body: str, *, number: int, repo: str, installation_id: int, login: str, review_id: int
) -> Payload:
    """A review ``submitted`` with ``body``, from the example, brought up to the current schema."""
    payload = webhook_example("pull_request_review", "submitted")
    for side in ("base", "head"):  # newer schemas require it; the example predates it
        payload["pull_request"][side]["repo"].setdefault("has_discussions", False)
    payload = json.loads(json.dumps(payload).replace(EXAMPLE_REPO, repo))
    payload["installation"] = {"id": installation_id, "node_id": INSTALLATION_NODE}
    payload["pull_request"]["number"] = number
    payload["review"].update(id=review_id, body=body)
    payload["review"]["user"] = {**payload["review"]["user"], "login": login, "type": "User"}
    return payload


def workflow_run(action: str, run: dict[str, Any], *, repo: str, installation_id: int) -> Payload:
    """A `workflow_run` event for ``run`` (as the REST API describes one), from the example."""
    example = json.dumps(webhook_example("workflow_run", "completed"))
    payload = json.loads(example.replace(ACTIONS_EXAMPLE_REPO, repo))
    payload["action"] = action
    payload["installation"] = {"id": installation_id, "node_id": INSTALLATION_NODE}
    keys = (
        "id",
        "display_title",
        "event",
        "path",
        "status",
        "conclusion",
        "run_attempt",
        "html_url",
        "head_sha",
        "head_branch",
    )
    payload["workflow_run"].update({key: run[key] for key in keys})
    payload["workflow_run"]["path"] = run["path"].split("@")[0]
    # The run's own times, not the example's (the bot's budget reads their difference as the run's
    # length): it started when it was dispatched, and its last update is this event.
    started = run.get("created_at") or payload["workflow_run"]["run_started_at"]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload["workflow_run"].update(run_started_at=started, updated_at=max(started, now))
    if action != "completed":
        status = "in_progress" if action == "in_progress" else "queued"
        payload["workflow_run"].update(status=status, conclusion=None)
    return payload
