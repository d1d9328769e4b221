"""The stand-in's web pages, in place of github.com's: the pull requests, a pull request's thread
as the bot wrote it (comments rendered from Markdown, reactions, check runs and statuses, labels),
its files changed (with the anchors the bot's links point at), and a workflow run with its log. A
comment written on a thread reaches the bot as GitHub's `issue_comment` webhook; deliveries sent
to the stand-in's `/webhook` (from `perfbot deliver`) are recorded, as GitHub holds the comment
the bot then reacts to, and passed on to the bot unchanged."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from werkzeug.wrappers import Request, Response

from . import markdown, payloads
from .github import GitHubEmulator, Pull, RepoState
from .hookshot import Answer

HERE = Path(__file__).parent
EMOJI = {
    "+1": "👍",
    "-1": "👎",
    "laugh": "😄",
    "confused": "😕",
    "heart": "❤️",
    "hooray": "🎉",
    "rocket": "🚀",
    "eyes": "👀",
}
_TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
_PULL = re.compile(
    r"/(?P<repo>[\w.-]+/[\w.-]+)/pull/(?P<number>[0-9]{1,9})"
    r"(?P<page>/files|/state|/comments)?"
)
_RUN = re.compile(r"/(?P<repo>[\w.-]+/[\w.-]+)/actions/runs/(?P<run>[0-9]{1,12})")
_RUN_CSS = {"success": "open", "failure": "closed", "cancelled": "closed"}  # the state pill's colour
_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Hooks:
    """How the pages reach the bot: ``send`` an event with a payload, ``forward`` a delivery as
    received; ``secret``: the webhook secret deliveries are signed with."""

    send: Callable[[str, dict[str, Any]], Answer]
    forward: Callable[[bytes, dict[str, str]], Answer]
    secret: str
    installation_id: int


class Site:
    """Called by the stand-in for every request outside the REST API; None: no such page."""

    def __init__(
        self,
        standin: GitHubEmulator,
        hooks: Hooks,
        user: str,
        dashboard: str,
        mermaid: Path | str | None = None,
    ):
        """``mermaid``: the path of mermaid.min.js, which draws the comments' charts, or why there
        is none (the page then shows their source and says so)."""
        self.standin, self.hooks, self.user, self.dashboard = standin, hooks, user, dashboard
        self.mermaid = mermaid

    def __call__(self, request: Request) -> Response | None:
        path = request.path.rstrip("/") or "/"
        if path == "/" and request.method == "GET":
            return self._page("index.html", repos=self._repos())
        if path == "/_sandbox/sandbox.css":
            return Response((HERE / "sandbox.css").read_text(), 200, mimetype="text/css")
        if path == "/_sandbox/mermaid.min.js" and isinstance(self.mermaid, Path):
            return Response(self.mermaid.read_bytes(), 200, mimetype="text/javascript")
        if path == "/webhook" and request.method == "POST":
            return self._relay(request)
        pull = _PULL.fullmatch(path)
        if pull is not None:
            return self._pull(request, pull["repo"], int(pull["number"]), pull["page"] or "")
        run = _RUN.fullmatch(path)
        if run is not None and request.method == "GET":
            return self._run(run["repo"], int(run["run"]))
        return None

    # pages

    def _pull(self, request: Request, repo: str, number: int, page: str) -> Response | None:
        with self.standin.lock:
            state = self.standin.repos.get(repo)
            pull = state.pulls.get(number) if state is not None else None
            if state is None or pull is None:
                return Response("no such pull request in the sandbox", 404, mimetype="text/plain")
            if page == "/comments" and request.method == "POST":
                return self._comment(request, state, pull)
            if request.method != "GET":
                return Response("method not allowed", 405, mimetype="text/plain")
            if page == "/state":
                return Response(self._version(repo, pull), 200, mimetype="text/plain")
            if page == "/files":
                return self._page(
                    "files.html", repo=repo, pull=self._pull_view(repo, pull), files=list(_files(pull.diff))
                )
            labels = [
                {
                    "name": name,
                    "css": "risk-" + name.rsplit(" ", 1)[-1] if name.startswith("perf-risk") else "",
                }
                for name in self.standin.labels.get((repo, number), [])
            ]
            return self._page(
                "pull.html",
                repo=repo,
                pull=self._pull_view(repo, pull),
                user=self.user,
                comments=self._comments(repo, number),
                checks=self._checks(repo, pull.head_sha),
                labels=labels,
            )

    def _run(self, repo: str, run_id: int) -> Response:
        with self.standin.lock:
            run = self.standin.runs.get(run_id)
            if run is None or run["_repo"] != repo:
                return Response("no such workflow run in the sandbox", 404, mimetype="text/plain")
            artifacts = [a["name"] for a in self.standin.artifacts.values() if a["_run"] == run_id]
            inputs: dict[str, str] = next(
                (d["inputs"] for d in self.standin.dispatches if d["run_id"] == run_id), {}
            )
            status, conclusion = run["status"], run.get("conclusion")
            word = (conclusion or status).replace("_", " ")
            css = _RUN_CSS.get(conclusion or "", "merged")
            return self._page(
                "run.html",
                repo=repo,
                run=run,
                inputs=sorted(inputs.items()),
                artifacts=artifacts,
                log=run.get("_log", ""),
                state_word=word.capitalize(),
                state_css=css,
            )

    def _page(self, name: str, **values: Any) -> Response:
        mermaid = {
            "mermaid": isinstance(self.mermaid, Path),
            "mermaid_missing": self.mermaid if isinstance(self.mermaid, str) else None,
        }
        page = _TEMPLATES.get_template(name).render(dashboard=self.dashboard, **mermaid, **values)
        return Response(page, 200, mimetype="text/html")

    # what the pages show

    def _repos(self) -> list[dict[str, Any]]:
        with self.standin.lock:
            return [
                {
                    "name": name,
                    "pulls": [
                        self._pull_view(name, p) | {"comments": len(self.standin.comments_on(name, p.number))}
                        for p in sorted(state.pulls.values(), key=lambda p: -p.number)
                    ],
                }
                for name, state in self.standin.repos.items()
            ]

    def _pull_view(self, repo: str, pull: Pull) -> dict[str, Any]:
        state = "merged" if pull.merged else pull.state
        return {
            "number": pull.number,
            "title": pull.title or f"Pull request #{pull.number}",
            "state": state,
            "state_word": state.capitalize(),
            "author": pull.author,
            "base_ref": pull.base_ref,
            "head_ref": pull.head_ref or "head",
            "head_sha": pull.head_sha,
            "url": f"/{repo}/pull/{pull.number}",
        }

    def _comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        shown = []
        for comment in sorted(self.standin.comments_on(repo, number), key=lambda c: c["id"]):
            counts: dict[str, int] = {}
            for content in self.standin.reactions_on(comment["id"]):
                counts[content] = counts.get(content, 0) + 1
            updated = comment.get("updated_at")
            edited = updated if updated != comment.get("created_at") else None
            shown.append(
                {
                    "id": comment["id"],
                    "login": comment["user"]["login"],
                    "bot": comment["user"]["type"] == "Bot",
                    "html": markdown.render(comment["body"]),
                    "when": _when(comment.get("created_at")),
                    "edited": _when(edited) if edited else "",
                    "reactions": [(EMOJI.get(k, k), n) for k, n in counts.items()],
                }
            )
        return shown

    def _checks(self, repo: str, sha: str) -> list[dict[str, Any]]:
        found = []
        for run in sorted(self.standin.checks_for(repo, sha), key=lambda r: r["id"]):
            icon, css = _mark(run.get("conclusion") if run["status"] == "completed" else "running")
            title = (run.get("output") or {}).get("title") or run["status"].replace("_", " ")
            found.append(
                {
                    "name": run["name"],
                    "icon": icon,
                    "css": css,
                    "what": title,
                    "url": _local(run.get("details_url"), self.standin.base_url),
                }
            )
        for status in self.standin.statuses:
            if status["_repo"] == repo and status["_sha"] == sha:
                outcome = {"success": "success", "pending": "running"}.get(status["state"], "failure")
                icon, css = _mark(outcome)
                found.append(
                    {
                        "name": status["context"],
                        "icon": icon,
                        "css": css,
                        "what": status.get("description") or status["state"],
                        "url": None,
                    }
                )
        return found

    def _version(self, repo: str, pull: Pull) -> str:
        """Changes whenever what the thread shows changes."""
        seen = [
            (c["id"], c["body"], self.standin.reactions_on(c["id"]))
            for c in self.standin.comments_on(repo, pull.number)
        ]
        checks = [
            (r["id"], r["status"], r.get("conclusion"), (r.get("output") or {}).get("title"))
            for r in self.standin.checks_for(repo, pull.head_sha)
        ]
        labels = self.standin.labels.get((repo, pull.number))
        text = json.dumps([seen, checks, labels, pull.state, pull.merged], default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    # what the pages do

    def _comment(self, request: Request, state: RepoState, pull: Pull) -> Response:
        """A comment by the sandbox's user, then GitHub's `issue_comment` webhook for it."""
        text = request.form.get("body", "").replace("\r\n", "\n").strip()
        target = f"/{state.full_name}/pull/{pull.number}"
        if not text:
            return Response("", 303, headers={"Location": target})
        comment = self.standin.add_comment(state.full_name, pull.number, text, self.user)
        payload = payloads.issue_comment(
            text,
            number=pull.number,
            repo=state.full_name,
            installation_id=self.hooks.installation_id,
            login=self.user,
            comment_id=comment["id"],
        )
        self.hooks.send("issue_comment", payload)
        return Response("", 303, headers={"Location": f"{target}#issuecomment-{comment['id']}"})

    def _relay(self, request: Request) -> Response:
        """A delivery for the bot, from `perfbot deliver`: checked as the bot checks it, a comment it
        carries recorded on its pull request, then passed on as it came."""
        body = request.get_data()
        signature = request.headers.get("X-Hub-Signature-256", "")
        expected = "sha256=" + hmac.new(self.hooks.secret.encode(), body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(signature, expected):
            return _json(403, "signature does not match the sandbox's webhook secret")
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if request.headers.get("X-GitHub-Event") == "issue_comment" and isinstance(payload, dict):
            self._hold_comment(payload)
        passed = {
            k: v
            for k, v in request.headers.items()
            if k.lower().startswith("x-") or k.lower() in ("user-agent", "content-type")
        }
        answer = self.hooks.forward(body, passed)
        return _json(answer.status, answer.message)

    def _hold_comment(self, payload: dict[str, Any]) -> None:
        try:
            repo, number = payload["repository"]["full_name"], int(payload["issue"]["number"])
            comment = payload["comment"]
            comment_id, login, text = int(comment["id"]), str(comment["user"]["login"]), str(comment["body"])
        except (KeyError, TypeError, ValueError):
            return
        with self.standin.lock:
            state = self.standin.repos.get(repo)
            if state is not None and number in state.pulls and comment_id not in self.standin.comments:
                self.standin.add_comment(repo, number, text, login, comment_id=comment_id)


def _files(diff: str):
    """Each file of a unified diff: its path, the anchor GitHub gives it, and its rows."""
    for section in re.split(r"(?m)^(?=diff --git )", diff):
        if not section.startswith("diff --git "):
            continue
        path = section.split(" b/", 1)[1].split("\n", 1)[0]
        anchor = "diff-" + hashlib.sha256(path.encode()).hexdigest()
        rows, old, new = [], 0, 0
        for line in section.split("\n")[1:]:
            hunk = _HUNK.match(line)
            if hunk:
                old, new = int(hunk[1]), int(hunk[2])
                rows.append({"kind": "hunk", "old": "", "new": "", "text": line, "id": None})
            elif not rows or line.startswith(("--- ", "+++ ", "\\")):
                continue
            elif line.startswith("+"):
                rows.append({"kind": "add", "old": "", "new": new, "text": line, "id": f"{anchor}R{new}"})
                new += 1
            elif line.startswith("-"):
                rows.append({"kind": "del", "old": old, "new": "", "text": line, "id": f"{anchor}L{old}"})
                old += 1
            elif line.startswith(" "):
                rows.append({"kind": "", "old": old, "new": new, "text": line, "id": f"{anchor}R{new}"})
                old, new = old + 1, new + 1
        yield {"path": path, "anchor": anchor, "rows": rows}


def _mark(conclusion: str | None) -> tuple[str, str]:
    return {
        "success": ("✓", "ok"),
        "neutral": ("◼", "neutral"),
        "skipped": ("◼", "neutral"),
        "running": ("●", "running"),
        "cancelled": ("⊘", "neutral"),
    }.get(conclusion or "", ("✗", "bad"))


def _local(url: str | None, base: str) -> str | None:
    """A link the bot gave, if it leads to a page the sandbox has."""
    return url if url and url.startswith(base) else None


def _when(stamp: str | None) -> str:
    if not stamp:
        return ""
    try:
        at = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return stamp
    return at.astimezone().strftime("%H:%M:%S")


def _json(status: int, message: str) -> Response:
    return Response(json.dumps({"message": message}), status, mimetype="application/json")
