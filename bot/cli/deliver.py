"""`perfbot deliver`: send a webhook payload to a perfbot server as GitHub would, signed with the
webhook secret, so that the bot can be tried without GitHub (GitHub's example payloads, or a
delivery copied from the App's advanced settings); build a comment, review or pull request event
on a pull request from GitHub's example (`--pull-request`, `--body`); or, with `--dry-run`, print
what the bot would write to GitHub for it, with no server and no GitHub (`bot.sandbox.dry_run`).

Sending is standard library only (`bot.sandbox.hookshot`), so that it works on any install of
perfbot; a dry run needs the server's packages.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from bot.sandbox import hookshot

from .measure_options import positive_float
from .parsing import UsageError

MAX_PAYLOAD = 25 * 2**20  # GitHub sends no larger delivery
HEADER_VALUE = re.compile(r"[!-~]+")  # printable ASCII, no space: what an event name or an id holds
TIMEOUT, DRY_RUN_TIMEOUT = 30, 60  # seconds for the answer; for the bot to finish a dry run
MAX_TIMEOUT = 24 * 3600  # socket.settimeout overflows from about 1e10 s; no answer is worth a day
REPO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
# Where --body goes, per event: the text a command is read from.
BODY_OF = {
    "issue_comment": "comment",
    "pull_request_review": "review",
    "pull_request_review_comment": "comment",
    "pull_request": "pull_request",
}
BUILT = ("issue_comment", "pull_request_review", "pull_request")  # the events --pull-request builds


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "deliver",
        help="send a webhook payload to a perfbot server, signed as GitHub signs it",
        description="POST PAYLOAD (a JSON file, or - for standard input) to URL as GitHub delivers the "
        "webhook EVENT: signed with the webhook secret (X-Hub-Signature-256), with GitHub's "
        "headers. Without PAYLOAD, --pull-request N builds an issue_comment, "
        "pull_request_review or pull_request event on pull request N from GitHub's example. "
        "Prints the server's answer in one line; exit 0 for a 2xx answer, 1 for another, 2 "
        "when it could not be sent. --dry-run prints instead what the bot would write to "
        "GitHub (comments, check runs, statuses, labels, reactions, workflow dispatches), "
        "running it in this process against a stand-in for GitHub.",
    )
    parser.add_argument(
        "event",
        metavar="EVENT",
        help="the event name, as X-GitHub-Event: pull_request, issue_comment, workflow_run, ping, ...",
    )
    parser.add_argument(
        "payload",
        metavar="PAYLOAD",
        nargs="?",
        help="the payload: a JSON file, or - for standard input (optional with --pull-request)",
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--to", metavar="URL", help="the webhook URL, e.g. http://127.0.0.1:8000/webhook")
    target.add_argument(
        "--dry-run",
        action="store_true",
        help="send nothing: run the delivery through the bot in this process, against a "
        "stand-in for GitHub, and print what it would write to GitHub",
    )
    parser.add_argument("--secret", help="the webhook secret (default: the first of PERFBOT_WEBHOOK_SECRET)")
    parser.add_argument("--action", help="set the payload's action (opened, synchronize, created, ...)")
    parser.add_argument(
        "--body",
        metavar="TEXT",
        help="set the comment's (issue_comment), the review's (pull_request_review) or the "
        'pull request\'s (pull_request) body, e.g. "/bench"',
    )
    parser.add_argument(
        "--pull-request",
        type=_number,
        metavar="N",
        help="the event is on pull request N (a comment's issue becomes pull request N); "
        "without PAYLOAD, build the event from GitHub's example",
    )
    parser.add_argument(
        "--repo",
        metavar="OWNER/NAME",
        help="the repository of a built event (default: the example's, Codertocat/Hello-World)",
    )
    parser.add_argument(
        "--login",
        metavar="LOGIN",
        help="who comments or reviews in a built event (default: the example's, Codertocat)",
    )
    parser.add_argument(
        "--delivery",
        metavar="GUID",
        help="X-GitHub-Delivery (default: a new UUID; repeat one to test deduplication)",
    )
    parser.add_argument("--hook-id", default="1", metavar="ID", help="X-GitHub-Hook-ID (default 1)")
    parser.add_argument(
        "--timeout",
        type=positive_float,
        metavar="SECONDS",
        help="how long to wait for the answer (default 30; with --dry-run, for the bot "
        "to finish, default 60)",
    )
    parser.add_argument(
        "--diff",
        metavar="FILE",
        help="--dry-run: the pull request's change, a unified diff such as `git diff "
        "main...` prints (default: the sample engine's slow commit)",
    )
    parser.add_argument(
        "--config", metavar="FILE", help="--dry-run: the repository's .github/perfbot.yml (default: none)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.timeout is None:
        args.timeout = DRY_RUN_TIMEOUT if args.dry_run else TIMEOUT
    if args.timeout > MAX_TIMEOUT:
        raise UsageError(f"--timeout {args.timeout:g}: expected at most {MAX_TIMEOUT} seconds (a day)")
    for name, value in (("EVENT", args.event), ("--delivery", args.delivery), ("--hook-id", args.hook_id)):
        _header_value(name, value)
    _check_options(args)
    body, payload = _payload(args)
    guid = args.delivery or str(uuid.uuid4())
    action = payload.get("action")
    what = f"{args.event}.{action}" if isinstance(action, str) else args.event
    if args.dry_run:
        return _dry_run(args, body, payload, what)
    target = _url(args.to)
    secret = _secret(args.secret)
    headers = hookshot.headers(args.event, body, secret, guid, args.hook_id, payload)
    started = time.monotonic()
    try:
        answer = hookshot.post(target, body, headers, args.timeout)
    except hookshot.Unreachable as error:
        raise UsageError(str(error)) from None
    took = time.monotonic() - started
    print(f"{answer.line()} ({what}, delivery {guid}, {took:.2f} s)")
    return 0 if answer.ok else 1


def _check_options(args: argparse.Namespace) -> None:
    if not args.dry_run:
        for name in ("diff", "config"):
            if getattr(args, name) is not None:
                raise UsageError(f"--{name} is for --dry-run: a server reads the pull request from GitHub")
    if args.payload is None and args.pull_request is None:
        raise UsageError(
            "PAYLOAD is needed (a JSON file, or - for standard input), or --pull-request N to "
            f"build one of {', '.join(BUILT)} from GitHub's example"
        )
    if args.payload is None and args.event not in BUILT:
        raise UsageError(f"--pull-request builds {', '.join(BUILT)} events, not {args.event}: give PAYLOAD")
    if args.payload is not None:
        for name in ("repo", "login"):
            if getattr(args, name) is not None:
                raise UsageError(
                    f"--{name} is for an event perfbot deliver builds (no PAYLOAD); edit PAYLOAD instead"
                )
    if args.repo is not None and not REPO_NAME.fullmatch(args.repo):
        raise UsageError(f"--repo {args.repo!r}: expected OWNER/NAME, e.g. octocat/Hello-World")
    if args.login is not None and not LOGIN.fullmatch(args.login):
        raise UsageError(f"--login {args.login!r}: expected a GitHub login (letters, digits, hyphens)")
    if args.body is not None and args.event not in BODY_OF:
        raise UsageError(
            f"--body sets the body of a comment, review or pull request, which {args.event} "
            "events have none of"
        )


def _payload(args: argparse.Namespace) -> tuple[bytes, dict]:
    """The bytes to send (a file's own, unless an option changes the payload) and the payload."""
    if args.payload is None:
        payload = _built(args)
        changed = True
    else:
        data, payload = _read(args.payload)
        changed = any(value is not None for value in (args.action, args.body, args.pull_request))
        if not changed:
            return data, payload
        if args.pull_request is not None:
            _on_pull_request(args.event, payload, args.pull_request)
    if args.action is not None:
        payload["action"] = args.action
    if args.body is not None:
        _set_body(args.event, payload, args.body)
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(), payload


def _built(args: argparse.Namespace) -> dict:
    from bot.sandbox import payloads
    from bot.sandbox.examples import webhook_example

    repo, number = args.repo or payloads.EXAMPLE_REPO, args.pull_request
    comment_id = 10**9 + secrets.randbelow(10**9)  # a new comment each time: perfbot acts once per comment
    if args.event == "issue_comment":
        example = webhook_example("issue_comment", "created")
        return payloads.issue_comment(
            args.body or "",
            number=number,
            repo=repo,
            installation_id=example["installation"]["id"],
            login=args.login or example["comment"]["user"]["login"],
            comment_id=comment_id,
        )
    if args.event == "pull_request_review":
        example = webhook_example("pull_request_review", "submitted")
        return payloads.pull_request_review(
            args.body or "",
            number=number,
            repo=repo,
            installation_id=1,
            login=args.login or example["review"]["user"]["login"],
            review_id=comment_id,
        )
    return payloads.pull_request(args.action or "opened", number=number, repo=repo, installation_id=1)


def _on_pull_request(event: str, payload: dict, number: int) -> None:
    """Point ``payload`` at pull request ``number`` of its repository."""
    from bot.sandbox import payloads

    if event == "issue_comment":
        issue, repository = payload.get("issue"), payload.get("repository")
        if (
            not isinstance(issue, dict)
            or not isinstance(repository, dict)
            or not isinstance(repository.get("full_name"), str)
        ):
            raise UsageError(
                "--pull-request: the issue_comment payload has no issue or repository "
                "to point at the pull request"
            )
        issue["number"] = number
        issue["pull_request"] = payloads.pull_request_link(repository["full_name"], number)
    elif event in ("pull_request", "pull_request_review", "pull_request_review_comment"):
        pull = payload.get("pull_request")
        if not isinstance(pull, dict):
            raise UsageError(f"--pull-request: the {event} payload has no pull_request object")
        pull["number"] = number
        if "number" in payload:
            payload["number"] = number
    else:
        raise UsageError(f"--pull-request: {event} events are not on a pull request")


def _set_body(event: str, payload: dict, text: str) -> None:
    key = BODY_OF[event]
    holder = payload.get(key)
    if not isinstance(holder, dict):
        raise UsageError(f"--body: the {event} payload has no {key} object whose body to set")
    holder["body"] = text


def _dry_run(args: argparse.Namespace, body: bytes, payload: dict, what: str) -> int:
    from bot.sandbox import dry_run

    diff = _text(args.diff, "--diff") if args.diff else None
    config = _text(args.config, "--config") if args.config else None
    outcome = dry_run.run(args.event, payload, body, diff=diff, config=config, timeout=args.timeout)
    print(f"{outcome.answer.line()} ({what}, dry run)")
    writes = outcome.writes
    change = "the change given by --diff" if args.diff else "the sample engine's slow commit as its change"
    print(
        f"perfbot would write to GitHub {len(writes)} time(s) (the stand-in held the payload's repository, "
        f"with {change}):"
    )
    print()
    for line in dry_run.describe(writes):
        print(line)
    for failure in outcome.failures:
        print(f"failed: {failure}")
    if not outcome.finished:
        print(f"the bot had not finished after {args.timeout:g} s")
    return 0 if outcome.answer.ok and not outcome.failures and outcome.finished else 1


def _text(name: str, option: str) -> str:
    try:
        return Path(name).read_text(encoding="utf-8")
    except IsADirectoryError:
        raise UsageError(f"{option} {name}: is a directory") from None
    except UnicodeDecodeError:
        raise UsageError(f"{option} {name}: not UTF-8 text") from None
    except OSError as error:
        raise UsageError(f"{option} {name}: cannot read ({error.strerror})") from None


def _number(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 2**31:
        raise argparse.ArgumentTypeError(f"expected a pull request number, got {text}")
    return int(text)


def _url(text: str) -> str:
    if not text.isprintable():  # a newline would split the error message, or the request line
        raise UsageError(f"--to {text!r}: a URL holds no control characters")
    try:
        parts = urlsplit(text)
    except ValueError as error:  # an unclosed or misused [ ] around the host
        raise UsageError(f"--to {text}: not a valid URL ({error})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"--to {text}: expected an http:// or https:// URL, e.g. http://127.0.0.1:8000/webhook"
        )
    return text


def _header_value(name: str, value: str | None) -> None:
    """Refuse what http.client would refuse with a traceback (a newline, a character beyond
    Latin-1) or send as a header no GitHub delivery has (a space, a control character, nothing)."""
    if value is not None and not HEADER_VALUE.fullmatch(value):
        raise UsageError(
            f"{name} {value!r}: expected printable ASCII characters, no spaces (it is an HTTP header's value)"
        )


def _secret(given: str | None) -> str:
    if given:
        return given
    configured = [s.strip() for s in os.environ.get("PERFBOT_WEBHOOK_SECRET", "").split(",") if s.strip()]
    if not configured:
        raise UsageError("no webhook secret: pass --secret or set PERFBOT_WEBHOOK_SECRET (the server's)")
    return configured[0]


def _read(name: str) -> tuple[bytes, dict]:
    """The file's (or standard input's) bytes and the payload they hold."""
    where = "standard input" if name == "-" else name
    try:
        if name == "-":
            data = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
        else:
            with Path(name).open("rb") as handle:
                data = handle.read(MAX_PAYLOAD + 1)
    except IsADirectoryError:
        raise UsageError(f"{name}: is a directory, not a JSON file") from None
    except OSError as error:
        raise UsageError(f"{name}: cannot read ({error.strerror})") from None
    if len(data) > MAX_PAYLOAD:
        raise UsageError(f"{where}: larger than GitHub's 25 MiB limit for a delivery")
    try:
        payload = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{where}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise UsageError(
            f"{where}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None
    except RecursionError:
        raise UsageError(f"{where}: not valid JSON (nested too deeply)") from None
    if not isinstance(payload, dict):
        raise UsageError(f"{where}: a webhook payload is a JSON object, not {type(payload).__name__}")
    return data, payload
