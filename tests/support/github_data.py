"""GitHub's own test data (fetched by fetch_github_data.sh): REST description, webhook schemas
and webhook payload examples, with derived payloads validated against GitHub's schemas."""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
FETCH_SCRIPT = Path(__file__).with_name("fetch_github_data.sh")
FILES = ("rest-openapi.json", "webhooks-openapi.json", "webhooks-examples.json")


class MissingData(RuntimeError):
    """The cache is empty and could not be filled (no npm or no registry)."""


def data_dir() -> Path:
    return Path(os.environ.get("PERFBOT_GITHUB_DATA_DIR", ROOT / ".cache" / "github-test-data"))


def ensure() -> Path:
    """The cache folder, filled by the fetch script when something is missing."""
    where = data_dir()
    if all((where / name).is_file() for name in FILES):
        return where
    result = subprocess.run([str(FETCH_SCRIPT)], capture_output=True, text=True, check=False)
    if result.returncode != 0 or not all((where / name).is_file() for name in FILES):
        raise MissingData(f"cannot fetch GitHub test data: {result.stderr.strip()[-500:]}")
    return where


@functools.cache
def _load(name: str) -> dict | list:
    return json.loads((ensure() / name).read_text())


def rest_spec() -> dict:
    return _load("rest-openapi.json")


def webhook_spec() -> dict:
    return _load("webhooks-openapi.json")


def rest_example(name: str) -> dict | list:
    """A deep copy of ``components.examples[name].value`` from the REST description."""
    return copy.deepcopy(rest_spec()["components"]["examples"][name]["value"])


def webhook_examples(event: str) -> list[dict]:
    for entry in _load("webhooks-examples.json"):
        if entry["name"] == event:
            return copy.deepcopy(entry["examples"])
    raise KeyError(event)


def schema_name(event: str, action: str | None) -> str:
    name = f"webhook-{event.replace('_', '-')}"
    return f"{name}-{action.replace('_', '-')}" if action else name


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({**webhook_spec(), "$ref": f"#/components/schemas/{name}"})


def schema_errors(event: str, payload: dict) -> list[str]:
    """Where ``payload`` breaks GitHub's schema of its event and action (empty when valid)."""
    validator = _validator(schema_name(event, payload.get("action")))
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(payload)
    ]


def valid(event: str, payload: dict) -> dict:
    errors = schema_errors(event, payload)
    if errors:
        raise AssertionError(f"{event}.{payload.get('action')} breaks GitHub's schema: {errors[:5]}")
    return payload


def example(event: str, action: str | None = None, index: int = 0) -> dict:
    """The ``index``-th official example of ``event`` (with ``action``) that passes the schema."""
    found = [p for p in webhook_examples(event) if action is None or p.get("action") == action]
    passing = [p for p in found if not schema_errors(event, p)]
    return passing[index]


# Payloads the examples lack, derived from official ones and validated against GitHub's schema.


def pull_request(
    action: str,
    *,
    head_sha: str | None = None,
    number: int | None = None,
    repo: str | None = None,
    installation_id: int | None = None,
    **changes,
) -> dict:
    base = copy.deepcopy(example("pull_request", "opened"))
    payload = _retarget(base, head_sha, number, repo, installation_id)
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
    return valid("pull_request", payload)


def _retarget(payload: dict, head_sha, number, repo, installation_id) -> dict:
    pr = payload["pull_request"]
    if head_sha:
        pr["head"]["sha"] = head_sha
    if installation_id is not None:
        payload["installation"] = {
            "id": installation_id,
            "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==",
        }
    text = json.dumps(payload)
    if repo:
        text = text.replace("Codertocat/Hello-World", repo)
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


def installation_event(event: str, action: str, index: int = 0) -> dict:
    """An official `installation`/`installation_repositories` example, brought up to the current
    schema (timestamps as ISO strings, ``app_slug``), then validated."""
    found = [p for p in webhook_examples(event) if p.get("action") == action][index]
    inst = found["installation"]
    for key in ("created_at", "updated_at"):
        if isinstance(inst.get(key), int):
            inst[key] = datetime.fromtimestamp(inst[key], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    inst.setdefault("app_slug", "perfbot")
    if event == "installation_repositories":
        inst.setdefault("suspended_by", None)
        inst.setdefault("suspended_at", None)
        found.setdefault("requester", None)
    return valid(event, found)


def issue_comment(body: str, *, number: int, repo: str, installation_id: int, login: str,
                  comment_id: int, user_type: str = "User", on_pull_request: bool = True,
                  app_id: int | None = None) -> dict:
    """A comment ``created`` on pull request (or issue) ``number``, from the official example."""
    payload = copy.deepcopy(next(p for p in webhook_examples("issue_comment")
                                 if p.get("action") == "created" and p.get("installation")))
    payload = json.loads(json.dumps(payload).replace("Codertocat/Hello-World", repo))
    payload["installation"]["id"] = installation_id
    issue, comment = payload["issue"], payload["comment"]
    issue["number"] = number
    if on_pull_request:
        url = f"https://api.github.com/repos/{repo}/pulls/{number}"
        issue["pull_request"] = {"url": url, "html_url": f"https://github.com/{repo}/pull/{number}",
                                 "diff_url": f"https://github.com/{repo}/pull/{number}.diff",
                                 "patch_url": f"https://github.com/{repo}/pull/{number}.patch", "merged_at": None}
    comment.update(id=comment_id, body=body)
    comment["user"] = {**comment["user"], "login": login, "type": user_type}
    if app_id is not None:
        comment["performed_via_github_app"] = {**copy.deepcopy(_app_example()), "id": app_id}
    return valid("issue_comment", payload)


def pull_request_review(body: str, *, number: int, repo: str, installation_id: int, login: str,
                        review_id: int) -> dict:
    """A review ``submitted`` with ``body``, from the official example, brought up to the current schema."""
    payload = next(p for p in map(_with_discussions, webhook_examples("pull_request_review"))
                   if p.get("action") == "submitted" and not schema_errors("pull_request_review", p))
    payload = json.loads(json.dumps(payload).replace("Codertocat/Hello-World", repo))
    payload["installation"] = {"id": installation_id, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
    payload["pull_request"]["number"] = number
    payload["review"].update(id=review_id, body=body)
    payload["review"]["user"] = {**payload["review"]["user"], "login": login, "type": "User"}
    return valid("pull_request_review", payload)


def workflow_run(action: str, run: dict, *, repo: str, installation_id: int) -> dict:
    """A `workflow_run` event for ``run`` (as the REST API describes it), from the official example."""
    payload = copy.deepcopy(example("workflow_run", "completed"))
    payload = json.loads(json.dumps(payload).replace("octo-org/octo-repo", repo))
    payload["action"] = action
    payload["installation"] = {"id": installation_id, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
    keys = ("id", "display_title", "event", "path", "status", "conclusion", "run_attempt", "html_url", "head_sha",
            "head_branch")
    payload["workflow_run"].update({key: run[key] for key in keys})
    payload["workflow_run"]["path"] = run["path"].split("@")[0]
    if action != "completed":
        payload["workflow_run"].update(status="in_progress" if action == "in_progress" else "queued", conclusion=None)
    return valid("workflow_run", payload)



def _with_discussions(payload: dict) -> dict:
    """Newer schemas require `has_discussions` on repositories; the older examples predate it."""
    for side in ("base", "head"):
        payload["pull_request"][side]["repo"].setdefault("has_discussions", False)
    return payload


def _app_example() -> dict:
    """A GitHub App as webhooks describe one (from the official `check_run` example)."""
    return copy.deepcopy(example("check_run")["check_run"]["app"])
