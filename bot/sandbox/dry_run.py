"""`perfbot deliver --dry-run`: what the bot would write to GitHub for one delivery, found by
running it, without a server and without GitHub. The bot runs in this process (`inprocess.py`)
against a stand-in (`github.py`) that holds the payload's repository and pull request: its change
is the given diff (by default the sample engine's slow commit, `sample.slow_diff`), its
`.github/perfbot.yml` on the default branch the given text (by default none), and whoever the
payload says commented or reviewed may write to the repository. Every request that would change
something on GitHub is then described, one after another."""

from __future__ import annotations

import json
import re
import secrets
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.core.config import CONFIG_PATH
from bot.errors import UserError
from bot.settings import Settings

from . import hookshot, identity, sample
from .github import GitHubEmulator, Recorded
from .inprocess import InProcessBot

REPO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")


class NotAPullRequest(UserError, ValueError):
    """The payload names no repository or pull request for the stand-in to hold."""


@dataclass(frozen=True)
class Outcome:
    answer: hookshot.Answer
    writes: list[Recorded]
    failures: list[str]  # deliveries the bot gave up on, with why
    finished: bool  # False: the bot was still at work when the dry run stopped waiting


def run(
    event: str,
    payload: dict[str, Any],
    body: bytes,
    *,
    diff: str | None = None,
    config: str | None = None,
    timeout: float = 60.0,
) -> Outcome:
    """Deliver ``body`` (``payload``, as bytes) as ``event`` to a bot in this process and return
    what it wrote to the stand-in."""
    key, secret = identity.new_key(), secrets.token_hex(16)
    standin = GitHubEmulator()
    identity.trust(standin, key)
    hold(standin, payload, diff if diff is not None else sample.slow_diff(), config)
    standin.start()
    try:
        with tempfile.TemporaryDirectory(prefix="perfbot-dry-run-") as folder:
            settings = Settings(
                webhook_secrets=(secret,),
                app_id=identity.APP_ID,
                private_key=key.private_pem,
                github_api_url=standin.base_url,
            )
            bot = InProcessBot(settings, Path(folder)).start()
            try:
                headers = hookshot.headers(event, body, secret, str(uuid.uuid4()), payload=payload)
                answer = bot.deliver(body, headers)
                finished = bot.wait_idle(timeout)
                failures = bot.failures()
            finally:
                bot.stop()
    finally:
        standin.stop()
    return Outcome(answer, standin.writes(), failures, finished)


def hold(standin: GitHubEmulator, payload: dict[str, Any], diff: str, config: str | None) -> None:
    """Put the payload's repository and pull request on the stand-in, as GitHub would hold them."""
    repository = _object(payload, "repository")
    repo = repository.get("full_name")
    if not isinstance(repo, str) or not REPO_NAME.fullmatch(repo):
        raise NotAPullRequest("the payload names no repository (repository.full_name, OWNER/NAME)")
    branch = _text(repository, "default_branch") or "main"
    pull, issue = _object(payload, "pull_request"), _object(payload, "issue")
    number = pull.get("number", issue.get("number"))
    state = standin.add_repo(repo, branch)
    base = _text(_object(pull, "base"), "sha") or sample.BEFORE_SLOW_SHA
    head = _text(_object(pull, "head"), "sha") or sample.SLOW_SHA
    state.branches[branch] = base
    state.parents.update({head: [base], base: []})
    merge = _text(pull, "merge_commit_sha")
    if merge:
        state.parents[merge] = [base]
    if config is not None:
        state.files[(branch, CONFIG_PATH)] = config
    standin.add_workflow(repo)
    for key in ("comment", "review", "sender"):
        who = _login(payload, key)
        if who:
            state.permissions[who] = "write"
    if isinstance(number, int) and not isinstance(number, bool) and number > 0:
        author = _login(pull, "user") or _login(issue, "user") or "octocat"
        standin.add_pull(
            repo,
            number,
            head,
            diff,
            base_sha=base,
            base_ref=branch,
            author=author,
            state=_text(pull, "state") or "open",
            draft=pull.get("draft") is True,
        )
        comment = _object(payload, "comment")
        if isinstance(comment.get("id"), int):
            login = _login(payload, "comment") or "octocat"
            standin.add_comment(repo, number, _text(comment, "body") or "", login, comment_id=comment["id"])


def _object(holder: dict[str, Any], key: str) -> dict[str, Any]:
    found = holder.get(key)
    return found if isinstance(found, dict) else {}


def _text(holder: dict[str, Any], key: str) -> str | None:
    found = holder.get(key)
    return found if isinstance(found, str) and found else None


def _login(holder: dict[str, Any], key: str) -> str | None:
    """The login of ``holder[key]`` (a user, or an object with a user), if it has one."""
    found = _object(holder, key)
    return _text(found, "login") or _text(_object(found, "user"), "login")


def describe(writes: list[Recorded]) -> Iterator[str]:
    """Each write as a heading line (method, path, what it is) and the text it carries, indented."""
    for write in writes:
        body = write.body if isinstance(write.body, dict) else {}
        failed = f"  (answered {write.status})" if write.status >= 400 else ""
        yield f"{write.method} {write.path}{failed}"
        for line in _details(write.method, write.path, body, write.body):
            yield f"    {line}" if line else ""
        yield ""


def _details(method: str, path: str, body: dict[str, Any], raw: object) -> Iterator[str]:
    if path.endswith("/comments") or "/issues/comments/" in path and method == "PATCH":
        yield from str(body.get("body", "")).splitlines()
    elif "check-runs" in path:
        output = body.get("output") or {}
        states = ", ".join(str(body[k]) for k in ("status", "conclusion") if body.get(k))
        yield f"check run {body.get('name', '')!r}: {states}".rstrip(": ")
        for key in ("title", "summary", "text"):
            if output.get(key):
                first, *rest = str(output[key]).splitlines() or [""]
                yield f"{key}: {first}"
                yield from rest
    elif "/statuses/" in path:
        yield f"commit status {body.get('context')!r}: {body.get('state')} - {body.get('description', '')}"
    elif path.endswith("/labels") and method == "POST":
        names = body.get("labels", raw if isinstance(raw, list) else [])
        yield "labels: " + ", ".join(str(name) for name in names)
    elif "/labels/" in path and method == "DELETE":
        yield "label removed"
    elif path.endswith("/reactions"):
        yield f"reaction: {body.get('content')}"
    elif path.endswith("/dispatches"):
        inputs = json.dumps(body.get("inputs") or {}, sort_keys=True)
        yield f"workflow dispatch on {body.get('ref')}: {inputs}"
    elif raw is not None:
        yield json.dumps(raw, sort_keys=True)[:2000]
