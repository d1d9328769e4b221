"""GitHub's own test data (fetched by fetch_github_data.sh): REST description, webhook schemas
and webhook payload examples, with derived payloads validated against GitHub's schemas."""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
from pathlib import Path

import jsonschema

from bot.sandbox import examples, payloads

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


# Payloads the examples lack: the product's builders (bot/sandbox/payloads.py), each checked here
# against GitHub's schema of its event.


def pull_request(action: str, **kw) -> dict:
    return valid("pull_request", payloads.pull_request(action, **kw))


def installation_event(event: str, action: str) -> dict:
    return valid(event, payloads.installation_event(event, action))


def issue_comment(body: str, **kw) -> dict:
    return valid("issue_comment", payloads.issue_comment(body, **kw))


def pull_request_review(body: str, **kw) -> dict:
    return valid("pull_request_review", payloads.pull_request_review(body, **kw))


def workflow_run(action: str, run: dict, **kw) -> dict:
    return valid("workflow_run", payloads.workflow_run(action, run, **kw))


# The copy of GitHub's examples that the product carries (bot/sandbox/github_examples.json).

VENDORED_REST = (
    "artifact",
    "branch-get",
    "check-run-example-of-completed-conclusion",
    "commit",
    "content-file-response-if-content-is-a-file",
    "diff-entry-items",
    "full-repository",
    "installation-token",
    "integration",
    "issue",
    "issue-comment",
    "commit-comment",
    "label-items",
    "private-user-response-with-public-and-private-profile-information",
    "pull-request",
    "reaction",
    "repository-collaborator-permission-response-if-user-has-admin-permissions",
    "status",
    "workflow-run",
)


def vendored() -> dict:
    """What bot/sandbox/github_examples.json must hold: the REST examples the stand-in answers
    with, and the webhook examples the payload builders start from (each the one the builders
    above always took: the first of its kind that passes GitHub's schema)."""

    def first(event: str, action: str | None, test=lambda p: True) -> dict:
        return next(
            p
            for p in webhook_examples(event)
            if (action is None or p.get("action") == action) and test(p) and not schema_errors(event, p)
        )

    review = next(
        p
        for p in map(_with_discussions, webhook_examples("pull_request_review"))
        if p.get("action") == "submitted" and not schema_errors("pull_request_review", p)
    )
    comment = next(
        p for p in webhook_examples("issue_comment") if p.get("action") == "created" and p.get("installation")
    )
    webhooks = {
        "pull_request.opened": first("pull_request", "opened"),
        "issue_comment.created": comment,
        "pull_request_review.submitted": review,
        "workflow_run.completed": first("workflow_run", "completed"),
        "check_run": first("check_run", None),
        "installation.created": [p for p in webhook_examples("installation") if p.get("action") == "created"][
            0
        ],
        "installation_repositories.added": [
            p for p in webhook_examples("installation_repositories") if p.get("action") == "added"
        ][0],
    }
    sources = {
        name: (ensure() / f"{name}.source").read_text().strip()
        for name in ("rest-openapi.json", "webhooks-examples.json")
    }
    return {
        "sources": sources,
        "rest": {name: rest_example(name) for name in VENDORED_REST},
        "webhooks": webhooks,
    }


def write_vendored() -> Path:
    examples.DATA.write_text(
        json.dumps(vendored(), indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return examples.DATA


def _with_discussions(payload: dict) -> dict:
    """Newer schemas require `has_discussions` on repositories; the older examples predate it."""
    for side in ("base", "head"):
        payload["pull_request"][side]["repo"].setdefault("has_discussions", False)
    return payload


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--vendor"]:
        sys.exit("usage: python -m tests.support.github_data --vendor")
    print(f"wrote {write_vendored()}")
