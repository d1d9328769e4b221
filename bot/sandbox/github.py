"""A local, stateful stand-in for GitHub's REST API, a development tool: a real HTTP server on
127.0.0.1 that answers from GitHub's own examples (`examples.py`), for what perfbot calls. The
sandbox (`perfbot sandbox`, `perfbot deliver --dry-run`) runs the bot against it; the tests run
it with every request validated against GitHub's REST description (tests/support/github_emulator.py).

State: repositories (default branch, branches, commits, files per ref, collaborators'
permissions, workflows), pull requests (head and base, fork, author, diff), comments and their
reactions, labels, check runs, commit statuses, and GitHub Actions: workflow dispatches, workflow
runs and their artifacts (real zip files, downloaded through a redirect to a short-lived address,
as GitHub does). Faults can be injected per method and path: a status answered instead of (or after)
doing the work, e.g. a 502 after creating a comment; and a request can be held after its work is
done, until the test lets it answer.

It also plays github.com for a GitHub App's user authorization (the OAuth web flow, which is not
part of the REST description): `/login/oauth/authorize` shows a form where the browser says who
signs in, redirects back with a one-time code, and `/login/oauth/access_token` trades the code
for a user token that `GET /user` then answers for. And it plays github.com's registration of a
GitHub App from a manifest: the manifest posted to `/settings/apps/new` (or an organisation's
`/organizations/ORG/settings/apps/new`) shows a page that creates the App and redirects to the
manifest's `redirect_url` with a one-time code, which `POST /app-manifests/{code}/conversions`
trades for the new App's id, private key (a fresh RSA key), client secret and webhook secret; the
stand-in then answers as that App.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote, urlencode

import jwt
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

from . import examples as github_data

GITHUB = "https://api.github.com"
EXAMPLE_REPO = "octocat/Hello-World"
ACTIONS_EXAMPLE_REPO = "octo-org/octo-repo"
RUN_NAME = "perfbot bench ${{ inputs.correlation-id }}"
# The example workflow's inputs: the bench inputs, and the two a bisect adds (bot.core.bench.contract).
CONTRACT_INPUTS = (
    "pr",
    "base-sha",
    "head-sha",
    "suites",
    "rounds",
    "max-rounds",
    "correlation-id",
    "mode",
    "metric",
)
BLOB_PREFIX = "/_blobs/"  # the storage host GitHub redirects artifact downloads to
WEB = "https://github.com"
STOP_POLL_S = 0.05  # how often the serving loop looks whether it was told to stop
logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log lines in test output


@dataclass
class Pull:
    number: int
    head_sha: str
    diff: str
    state: str = "open"
    draft: bool = False
    base_ref: str = "main"
    base_sha: str = "9" * 40
    head_repo: str | None = ""  # "": the base repository; None: a deleted fork; else the fork's name
    author: str = "octocat"
    title: str | None = None  # None: the example's
    head_ref: str | None = None  # None: the example's
    merged: bool = False
    merge_sha: str | None = None  # the merge commit, once merged


@dataclass
class Workflow:
    id: int
    file: str
    run_name: str = RUN_NAME
    inputs: tuple[str, ...] = CONTRACT_INPUTS


@dataclass
class RepoState:
    full_name: str
    default_branch: str = "main"
    files: dict[tuple[str, str], str] = field(default_factory=dict)  # (ref, path) -> text
    pulls: dict[int, Pull] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)  # name -> head sha
    parents: dict[str, list[str]] = field(default_factory=dict)  # sha -> parent shas
    permissions: dict[str, str] = field(default_factory=dict)  # login -> admin | write | read
    workflows: dict[str, Workflow] = field(default_factory=dict)  # file name -> workflow


@dataclass
class Hold:
    method: str
    path: re.Pattern[str]
    release: threading.Event
    reached: threading.Event


@dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str]
    body: dict
    after: bool  # do the work, then answer the fault (the client cannot tell it happened)
    delay_s: float = 0.0  # `slow`: answer normally, this much later (a client's timeout runs out)


@dataclass
class Recorded:
    method: str
    path: str
    query: str
    body: object
    headers: dict[str, str]
    status: int = 0


class GitHubEmulator:
    """Start with `start()`; point PyGithub at `base_url`; inspect `comments`, `labels`, `check_runs`."""

    def __init__(
        self,
        tokens: set[str] | None = None,
        app_id: int | None = None,
        app_public_key: str | None = None,
        token_lifetime_s: int = 3600,
        diff_line_limit: int = 20_000,
    ):
        self.repos: dict[str, RepoState] = {}
        self.comments: dict[int, dict] = {}
        self.issues: dict[tuple[str, int], dict] = {}  # issues opened through the API (not pull requests)
        self.commit_comments: list[dict] = []
        self.labels: dict[tuple[str, int], list[str]] = {}
        self.check_runs: dict[int, dict] = {}
        self.blob_failures = 0  # the artifact storage answers 503 to this many downloads
        self.statuses: list[dict] = []
        self.requests: list[Recorded] = []
        self.invalid: list[str] = []
        self.faults: list[Fault] = []
        self.holds: list[Hold] = []
        self.reactions: list[dict] = []  # {"comment_id", "login", "content"}
        self.dispatches: list[dict] = []  # {"repo", "workflow", "ref", "inputs", "run_id"}
        self.runs: dict[int, dict] = {}
        self.artifacts: dict[int, dict] = {}
        self.blobs: dict[str, tuple[bytes, float]] = {}  # download token -> (zip, expiry)
        self.run_details = True  # False: a GitHub Enterprise Server that refuses return_run_details
        self.runs_listed = True  # False: dispatched runs not listed yet (GitHub lists them a moment later)
        self.app_slug = "perfbot"
        self.tokens = set(tokens or ())
        self.issued_tokens: list[str] = []
        self.app_id, self.app_public_key = app_id, app_public_key
        self.token_lifetime_s = token_lifetime_s
        self.token_owner = "octocat"  # nosec B105 - a login: the person a personal token belongs to
        self.diff_line_limit = diff_line_limit
        self.oauth_apps: dict[str, str] = {}  # client id -> client secret
        self.oauth_codes: dict[str, tuple[str, str, str]] = {}  # code -> (login, client id, redirect)
        self.user_tokens: dict[str, str] = {}  # user token -> login
        self.manifest_codes: dict[str, tuple[str, dict]] = {}  # code -> (owner, manifest)
        self.created_apps: list[dict] = []  # the Apps made from a manifest, as their conversion answered
        self.web_links = False  # True: github.com's addresses in answers point at this server's pages
        self.stamped = False  # True: new comments carry the time they were made (else the example's)
        self.site: Callable[[Request], Response | None] | None = None  # those pages (the sandbox's)
        self.trusted_origins: set[str] = set()  # may post the pages that only show (`_cross_site_write`)
        self._ids = itertools.count(1001)
        self._lock = threading.RLock()
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""
        self._routes = [(m, _compile(t), getattr(self, h)) for m, t, h in _ROUTES]
        self._web_routes = {(m, path): getattr(self, h) for m, path, h in _WEB_ROUTES}

    @property
    def lock(self) -> threading.RLock:
        """Held while a request changes the state: hold it to read a consistent view."""
        return self._lock

    # lifecycle

    def start(self, host: str = "127.0.0.1", port: int = 0) -> GitHubEmulator:
        server = self._server = make_server(host, port, self._wsgi, threaded=True)
        self.base_url = f"http://{host}:{server.server_port}"
        # stop() waits for the serving loop's next poll: 0.5 s by default, paid by every test
        self._thread = threading.Thread(target=server.serve_forever, args=(STOP_POLL_S,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # test set-up

    def add_repo(self, full_name: str, default_branch: str = "main") -> RepoState:
        self.repos[full_name] = RepoState(full_name, default_branch)
        return self.repos[full_name]

    def add_pull(self, repo: str, number: int, head_sha: str, diff: str, **kw) -> Pull:
        self.repos[repo].pulls[number] = Pull(number, head_sha, diff, **kw)
        return self.repos[repo].pulls[number]

    def add_workflow(self, repo: str, file: str = "perfbot-bench.yml", **kw) -> Workflow:
        workflow = Workflow(next(self._ids), file, **kw)
        self.repos[repo].workflows[file] = workflow
        return workflow

    def upload_artifact(self, repo: str, run_id: int, name: str, archive: bytes) -> dict:
        """An artifact of a run, as `actions/upload-artifact` leaves it: a zip archive."""
        artifact = _retarget(github_data.rest_example("artifact"), repo)
        artifact_id = next(self._ids)
        artifact.update(
            id=artifact_id,
            name=name,
            size_in_bytes=len(archive),
            expired=False,
            url=f"{GITHUB}/repos/{repo}/actions/artifacts/{artifact_id}",
            archive_download_url=f"{GITHUB}/repos/{repo}/actions/artifacts/{artifact_id}/zip",
        )
        artifact["workflow_run"] = {**artifact.get("workflow_run", {}), "id": run_id}
        artifact["_repo"], artifact["_run"], artifact["_zip"] = repo, run_id, archive
        self.artifacts[artifact_id] = artifact
        return artifact

    def complete_run(self, run_id: int, conclusion: str = "success") -> dict:
        run = self.runs[run_id]
        run.update(status="completed", conclusion=conclusion)
        return self._public(run)

    def hold(self, method: str, path: str) -> Hold:
        """Hold the next matching request after its work is done, until ``release`` is set."""
        held = Hold(method.upper(), re.compile(path), threading.Event(), threading.Event())
        self.holds.append(held)
        return held

    def add_comment(
        self,
        repo: str,
        number: int,
        body: str,
        login: str,
        user_type: str = "User",
        app_id: int | None = None,
        comment_id: int | None = None,
    ) -> dict:
        """A comment written by someone else (``user_type`` 'User' or 'Bot'; ``app_id``: made
        through that GitHub App), not through the API; ``comment_id``: its id (default: a new one)."""
        comment = _retarget(github_data.rest_example("issue-comment"), repo, number)
        comment_id = next(self._ids) if comment_id is None else comment_id
        comment.update(id=comment_id, body=body, url=f"{GITHUB}/repos/{repo}/issues/comments/{comment_id}")
        comment["user"] = {**comment["user"], "login": login, "type": user_type}
        comment["performed_via_github_app"] = (
            None if app_id is None else {**github_data.rest_example("integration"), "id": app_id}
        )
        comment["_issue"] = (repo, number)
        self._stamp(comment)
        self.comments[comment_id] = comment
        return comment

    def fail(
        self,
        method: str,
        path: str,
        status: int,
        times: int = 1,
        headers: dict | None = None,
        body: dict | None = None,
        after: bool = False,
    ) -> None:
        self.faults.append(
            Fault(
                method.upper(),
                re.compile(path),
                status,
                times,
                headers or {},
                body or {"message": "emulated failure"},
                after,
            )
        )

    def slow(self, method: str, path: str, seconds: float, times: int = 1) -> None:
        """Answer the next ``times`` matching requests ``seconds`` late (then as usual)."""
        self.faults.append(Fault(method.upper(), re.compile(path), 0, times, {}, {}, False, seconds))

    def _stamp(self, comment: dict) -> None:
        if self.stamped:
            comment["created_at"] = comment["updated_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    # what tests look at

    def comments_on(self, repo: str, number: int) -> list[dict]:
        return [c for c in self.comments.values() if c["_issue"] == (repo, number)]

    def checks_for(self, repo: str, sha: str) -> list[dict]:
        return [r for r in self.check_runs.values() if r["_repo"] == repo and r["head_sha"] == sha]

    def reactions_on(self, comment_id: int) -> list[str]:
        return [r["content"] for r in self.reactions if r["comment_id"] == comment_id]

    def writes(self, since: int = 0) -> list[Recorded]:
        """The requests from the ``since``-th on that change something (a new installation token
        does not: each of the bot's threads asks for its own)."""
        return [
            r
            for r in self.requests[since:]
            if r.method in ("POST", "PATCH", "PUT", "DELETE") and "/access_tokens" not in r.path
        ]

    # HTTP

    def _wsgi(self, environ, start_response):
        request = Request(environ)
        response = self._handle(request)
        return response(environ, start_response)

    def _handle(self, request: Request) -> Response:
        if request.path.startswith(BLOB_PREFIX):
            return self._blob(request)
        body = request.get_data()
        recorded = Recorded(
            request.method,
            request.path,
            request.query_string.decode(),
            _json_or_text(body),
            {
                k: v
                for k, v in request.headers.items()
                if k.lower() in ("accept", "authorization", "content-type", "user-agent")
            },
        )
        with self._lock:
            self.requests.append(recorded)
        if self._cross_site_write(request):
            recorded.status = 403
            return Response(
                "the GitHub stand-in refuses cross-site writes: a page of another site asked your "
                "browser to send this",
                403,
                mimetype="text/plain",
            )
        web = self._web_routes.get((request.method, request.path)) or self._web_pattern(request)
        if web is not None:  # github.com's pages, not the REST API
            with self._lock:
                response = web(request)
            recorded.status = response.status_code
            return response
        page = self.site(request) if self.site is not None and not _is_api(request.path) else None
        if page is not None:  # the sandbox's pages of pull requests and runs
            recorded.status = page.status_code
            return page
        problem = self._validate(request, body)
        if problem:
            with self._lock:
                self.invalid.append(f"{request.method} {request.path}: {problem}")
            response = _json(422, {"message": "Invalid request (emulator)", "errors": [problem]})
        else:
            response = self._route(request)
        recorded.status = response.status_code
        return response

    def _cross_site_write(self, request: Request) -> bool:
        """Whether a browser sends this write for a page of another site: any page the developer
        opens could otherwise post `/bench`, or anything else, to the stand-in on localhost. A
        browser says where a request comes from (``Origin``; ``Sec-Fetch-Site``); a client that is
        no browser (the bot, `perfbot deliver`, curl) says neither and is let through. Pages that
        only show something may be posted from the ``trusted_origins`` (the App's own server posts
        its manifest to the registration page, as on github.com)."""
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return False
        origin = request.headers.get("Origin")
        fetch_site = request.headers.get("Sec-Fetch-Site")
        own = {self.base_url, *self.trusted_origins} if _shows_only(request) else {self.base_url}
        if origin is not None:
            return origin.rstrip("/") not in own
        return fetch_site not in (None, "same-origin", "none")

    def _validate(self, request: Request, body: bytes) -> str | None:
        """What is wrong with the request, as GitHub's REST description says (None: nothing). The
        stand-in itself takes every request its handlers can read; the tests' subclass checks each
        against the description."""
        return None

    def _validation_path(self, request: Request) -> str:
        """The path as openapi-core matches it: a ``{path}`` parameter's own slashes escaped."""
        for method, pattern, _ in self._routes:
            match = pattern.fullmatch(request.path)
            if method == request.method and match and "path" in match.groupdict():
                start, end = match.span("path")
                return request.path[:start] + request.path[start:end].replace("/", "%2F")
        return request.path

    def _route(self, request: Request) -> Response:
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(request.path)
            if method == request.method and match:
                fault = self._fault(request)
                if fault is not None and fault.delay_s:
                    time.sleep(fault.delay_s)
                    fault = None
                if fault is not None and not fault.after:
                    return _json(fault.status, fault.body, fault.headers)
                if not self._authorized(request, handler):
                    return _json(401, {"message": "Bad credentials"})
                with self._lock:
                    response = handler(request, **{k: unquote(v) for k, v in match.groupdict().items()})
                self._wait_if_held(request)
                if fault is not None:
                    return _json(fault.status, fault.body, fault.headers)
                return self._rewrite(response)
        return _json(501, {"message": f"emulator does not implement {request.method} {request.path}"})

    def _fault(self, request: Request) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method == request.method and fault.path.search(request.path):
                    fault.times -= 1
                    return fault
        return None

    def _wait_if_held(self, request: Request) -> None:
        with self._lock:
            held = next(
                (
                    h
                    for h in self.holds
                    if h.method == request.method and h.path.search(request.path) and not h.reached.is_set()
                ),
                None,
            )
            if held is not None:
                held.reached.set()
        if held is not None:
            held.release.wait(60)

    def _authorized(self, request: Request, handler) -> bool:
        if handler in (self.create_token, self.get_app, self.convert_manifest) or not self.tokens:
            return True
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() in ("token", "bearer") and token in self.tokens

    def _rewrite(self, response: Response) -> Response:
        if response.mimetype == "application/json":
            data = response.get_data().replace(GITHUB.encode(), self.base_url.encode())
            if self.web_links:
                data = data.replace(f"{WEB}/".encode(), f"{self.base_url}/".encode())
            response.set_data(data)
        if "Link" in response.headers:
            response.headers["Link"] = response.headers["Link"].replace(GITHUB, self.base_url)
        return response

    # handlers: App auth

    def _jwt_problem(self, request: Request) -> Response | None:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer":
            return _json(401, {"message": "A JSON web token could not be decoded"})
        if self.app_public_key:
            try:
                claims = jwt.decode(token, self.app_public_key, algorithms=["RS256"])
            except jwt.PyJWTError as error:
                return _json(401, {"message": f"'Expiration time' claim or signature invalid: {error}"})
            if str(claims.get("iss")) != str(self.app_id):
                return _json(401, {"message": "Integration not found"})
        return None

    def get_app(self, request: Request) -> Response:
        problem = self._jwt_problem(request)
        if problem is not None:
            return problem
        app = github_data.rest_example("integration")
        return _json(200, {**app, "id": self.app_id, "slug": self.app_slug})

    def create_token(self, request: Request, installation_id: str) -> Response:
        problem = self._jwt_problem(request)
        if problem is not None:
            return problem
        issued = f"ghs_emulated{installation_id}x{next(self._ids)}"
        self.tokens.add(issued)
        self.issued_tokens.append(issued)
        body = github_data.rest_example("installation-token")
        expires = datetime.now(UTC) + timedelta(seconds=self.token_lifetime_s)
        body.update(token=issued, expires_at=expires.strftime("%Y-%m-%dT%H:%M:%SZ"))
        return _json(201, body)

    def get_user(self, request: Request) -> Response:
        if self._author(request)["type"] == "Bot":
            return _json(403, {"message": "Resource not accessible by integration"})
        body = github_data.rest_example("private-user-response-with-public-and-private-profile-information")
        return _json(200, {**body, **self._author(request)})

    def _author(self, request: Request) -> dict:
        """Who a request acts as: the App's bot for an installation token, the user of a user
        token, else the token's owner."""
        token = request.headers.get("Authorization", "").partition(" ")[2]
        if token in self.issued_tokens:
            return {"login": f"{self.app_slug}[bot]", "type": "Bot"}
        if token in self.user_tokens:
            return {"login": self.user_tokens[token], "type": "User"}
        return {"login": self.token_owner, "type": "User"}

    def _app_of(self, request: Request) -> dict | None:
        """The App a request is performed via (comments made with an installation token say so)."""
        token = request.headers.get("Authorization", "").partition(" ")[2]
        if token not in self.issued_tokens:
            return None
        return {**github_data.rest_example("integration"), "id": self.app_id, "slug": self.app_slug}

    # handlers: the App's user authorization (github.com's web flow)

    def add_oauth_app(self, client_id: str, client_secret: str) -> None:
        self.oauth_apps[client_id] = client_secret

    def authorize_page(self, request: Request) -> Response:
        client_id = request.args.get("client_id", "")
        if client_id not in self.oauth_apps:
            return Response("unknown client_id", 404, mimetype="text/plain")
        fields = "".join(
            f'<input type="hidden" name="{name}" value="{html.escape(request.args.get(name, ""))}">'
            for name in ("client_id", "redirect_uri", "state")
        )
        page = (
            "<!doctype html><title>Authorize perfbot</title><h1>Authorize the perfbot App</h1>"
            f'<form method="post" action="/login/oauth/authorize">{fields}'
            '<label>Sign in as <input name="login" id="login" required></label>'
            '<button type="submit" id="authorize">Authorize</button></form>'
        )
        return Response(page, 200, mimetype="text/html")

    def authorize(self, request: Request) -> Response:
        form = request.form
        if form.get("client_id") not in self.oauth_apps or not form.get("login"):
            return Response("bad authorization request", 400, mimetype="text/plain")
        code = secrets.token_hex(10)
        self.oauth_codes[code] = (form["login"], form["client_id"], form.get("redirect_uri", ""))
        target = f"{form.get('redirect_uri', '')}?{urlencode({'code': code, 'state': form.get('state', '')})}"
        return Response("", 302, headers={"Location": target})

    def access_token(self, request: Request) -> Response:
        """GitHub answers 200 with an ``error`` field for a bad code, not an error status."""
        form = request.form
        client_id = form.get("client_id", "")
        if self.oauth_apps.get(client_id) != form.get("client_secret"):
            return _json(
                200,
                {
                    "error": "incorrect_client_credentials",
                    "error_description": "The client_id and/or client_secret passed are incorrect.",
                },
            )
        grant = self.oauth_codes.pop(form.get("code", ""), None)
        if grant is None or grant[1] != client_id or grant[2] != form.get("redirect_uri", grant[2]):
            return _json(
                200,
                {
                    "error": "bad_verification_code",
                    "error_description": "The code passed is incorrect or expired.",
                },
            )
        token = f"ghu_emulated{next(self._ids)}"
        self.user_tokens[token] = grant[0]
        if self.tokens:
            self.tokens.add(token)
        return _json(200, {"access_token": token, "token_type": "bearer", "scope": ""})  # nosec B105 - a kind

    # handlers: a GitHub App registered from a manifest (github.com's pages, then the REST API)

    def _web_pattern(self, request: Request) -> Callable[[Request], Response] | None:
        """An organisation's App registration page: the only github.com page with a name in its path."""
        found = _ORG_NEW_APP.fullmatch(request.path)
        if request.method != "POST" or found is None:
            return None
        return lambda r: self.new_app_page(r, owner=found["org"])

    def new_app_page(self, request: Request, owner: str | None = None) -> Response:
        """What github.com shows for a posted manifest: the App to create, for whom, and a button."""
        try:
            manifest = json.loads(request.form.get("manifest", ""))
        except ValueError:
            return Response("the manifest is not JSON", 400, mimetype="text/plain")
        if (
            not isinstance(manifest, dict)
            or not isinstance(manifest.get("url"), str)
            or not str(manifest.get("redirect_url", "")).startswith(("http://", "https://"))
        ):
            return Response("a manifest needs url and redirect_url", 422, mimetype="text/plain")
        fields = "".join(
            f'<input type="hidden" name="{name}" value="{html.escape(value)}">'
            for name, value in (
                ("manifest", json.dumps(manifest)),
                ("state", request.args.get("state", "")),
                ("owner", owner or self.token_owner),
            )
        )
        page = (
            "<!doctype html><title>Create GitHub App</title>"
            f"<h1>Create GitHub App {html.escape(str(manifest.get('name', '')))} for "
            f"{html.escape(owner or self.token_owner)}</h1>"
            f'<form method="post" action="/settings/apps/new/create">{fields}'
            '<button type="submit" id="create-app">Create GitHub App</button></form>'
        )
        return Response(page, 200, mimetype="text/html")

    def create_app_from_manifest(self, request: Request) -> Response:
        manifest = json.loads(request.form["manifest"])
        code = secrets.token_hex(10)
        self.manifest_codes[code] = (request.form.get("owner", self.token_owner), manifest)
        query = urlencode({"code": code, "state": request.form.get("state", "")})
        target = f"{manifest['redirect_url']}?{query}"
        return Response("", 302, headers={"Location": target})

    def convert_manifest(self, request: Request, code: str) -> Response:
        """The new App's credentials, once per code; the stand-in answers as that App from then on."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        found = self.manifest_codes.pop(code, None)
        if found is None:
            return _not_found()
        owner, manifest = found
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ).decode()
        app_id = next(self._ids)
        slug = re.sub(r"[^a-z0-9]+", "-", str(manifest.get("name") or "app").lower()).strip("-") or "app"
        app = github_data.rest_example("integration")
        app.update(
            id=app_id,
            slug=slug,
            name=manifest.get("name") or slug,
            html_url=f"{WEB}/apps/{slug}",
            external_url=manifest["url"],
            owner={**app["owner"], "login": owner},
            permissions=manifest.get("default_permissions", {}),
            events=manifest.get("default_events", []),
            client_id=f"Iv1.{secrets.token_hex(8)}",
            client_secret=secrets.token_hex(20),
            webhook_secret=secrets.token_hex(20),
            pem=pem,
        )
        self.app_id, self.app_slug = app_id, slug
        self.app_public_key = (
            key.public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            .decode()
        )
        self.add_oauth_app(app["client_id"], app["client_secret"])
        self.created_apps.append(app)
        return _json(201, app)

    # handlers: pulls and contents

    def get_pull(self, request: Request, owner: str, repo: str, pull_number: str) -> Response:
        found_pull = self._pull(owner, repo, pull_number)
        if found_pull is None:
            return _not_found()
        state, pull = found_pull
        if "application/vnd.github.diff" in request.headers.get("Accept", ""):
            if pull.diff.count("\n") > self.diff_line_limit:
                return _json(
                    406,
                    {
                        "message": "Sorry, the diff exceeded the maximum number of lines (20000)",
                        "errors": [{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
                    },
                )
            return Response(pull.diff, 200, content_type="application/vnd.github.diff; charset=utf-8")
        body = _retarget(github_data.rest_example("pull-request"), state.full_name, pull.number)
        body.update(number=pull.number, state=pull.state, draft=pull.draft, merged=pull.merged)
        body["title"] = pull.title if pull.title is not None else body["title"]
        body["head"]["ref"] = pull.head_ref if pull.head_ref is not None else body["head"]["ref"]
        body["head"]["sha"], body["base"]["ref"] = pull.head_sha, pull.base_ref
        body["base"]["sha"] = pull.base_sha
        body["user"] = {**body["user"], "login": pull.author}
        if pull.head_repo is None:
            body["head"]["repo"] = None
        else:
            body["head"]["repo"] = {**body["head"]["repo"], "full_name": pull.head_repo or state.full_name}
        return _json(200, body)

    def list_files(self, request: Request, owner: str, repo: str, pull_number: str) -> Response:
        found_pull = self._pull(owner, repo, pull_number)
        if found_pull is None:
            return _not_found()
        state, pull = found_pull
        template = github_data.rest_example("diff-entry-items")[0]
        entries = []
        for section in re.split(r"(?m)^(?=diff --git )", pull.diff):
            if not section.startswith("diff --git "):
                continue
            name = section.split(" b/", 1)[1].split("\n", 1)[0]
            patch = section[section.find("@@") :] if "@@" in section else ""
            added = sum(1 for line in patch.splitlines() if line.startswith("+"))
            removed = sum(1 for line in patch.splitlines() if line.startswith("-"))
            entries.append(
                {
                    **template,
                    "filename": name,
                    "status": "modified",
                    "additions": added,
                    "deletions": removed,
                    "changes": added + removed,
                    "patch": patch.rstrip("\n"),
                }
            )
        return self._page(request, entries)

    def get_content(self, request: Request, owner: str, repo: str, path: str) -> Response:
        state = self.repos.get(f"{owner}/{repo}")
        if state is None:
            return _not_found()
        ref = request.args.get("ref", state.default_branch)
        text = state.files.get((ref, path))
        if text is None:
            return _not_found()
        body = github_data.rest_example("content-file-response-if-content-is-a-file")
        encoded = base64.b64encode(text.encode()).decode()
        body.update(
            type="file",
            encoding="base64",
            size=len(text),
            name=path.rsplit("/", 1)[-1],
            path=path,
            content=encoded,
        )
        return _json(200, _retarget(body, state.full_name))

    # handlers: comments

    def list_comments(self, request: Request, owner: str, repo: str, issue_number: str) -> Response:
        found_pull = self._pull(owner, repo, issue_number)
        if found_pull is None:
            return _not_found()
        state, pull = found_pull
        found = [
            self._public(c)
            for c in sorted(self.comments.values(), key=lambda c: c["id"])
            if c["_issue"] == (state.full_name, pull.number)
        ]
        return self._page(request, found)

    def create_comment(self, request: Request, owner: str, repo: str, issue_number: str) -> Response:
        found_pull = self._pull(owner, repo, issue_number)
        if found_pull is None:
            return _not_found()
        state, pull = found_pull
        text = request.get_json()["body"]
        if len(text) > 65_536:
            return _too_long()
        comment = _retarget(github_data.rest_example("issue-comment"), state.full_name, pull.number)
        comment_id = next(self._ids)
        comment.update(
            id=comment_id, body=text, url=f"{GITHUB}/repos/{state.full_name}/issues/comments/{comment_id}"
        )
        comment["_issue"] = (state.full_name, pull.number)
        comment["user"] = {**comment["user"], **self._author(request)}
        comment["performed_via_github_app"] = self._app_of(request)
        self._stamp(comment)
        self.comments[comment_id] = comment
        return _json(201, self._public(comment))

    def create_issue(self, request: Request, owner: str, repo: str) -> Response:
        state = self.repos.get(f"{owner}/{repo}")
        if state is None:
            return _not_found()
        data = request.get_json()
        if len(data.get("body") or "") > 65_536:
            return _too_long()
        number = max([*state.pulls, *(n for r, n in self.issues if r == state.full_name), 0]) + 1
        issue = _retarget(github_data.rest_example("issue"), state.full_name, number)
        issue.update(
            number=number,
            id=next(self._ids),
            title=data["title"],
            body=data.get("body"),
            html_url=f"{WEB}/{state.full_name}/issues/{number}",
            state="open",
        )
        issue.pop("pull_request", None)
        issue["user"] = {**issue["user"], **self._author(request)}
        self.issues[(state.full_name, number)] = issue
        return _json(201, issue)

    def update_issue(self, request: Request, owner: str, repo: str, issue_number: str) -> Response:
        issue = self.issues.get((f"{owner}/{repo}", int(issue_number)))
        if issue is None:
            return _not_found()
        data = request.get_json()
        if len(data.get("body") or "") > 65_536:
            return _too_long()
        issue.update({k: v for k, v in data.items() if k in ("title", "body", "state")})
        return _json(200, issue)

    def create_commit_comment(self, request: Request, owner: str, repo: str, commit_sha: str) -> Response:
        state = self.repos.get(f"{owner}/{repo}")
        if state is None:
            return _not_found()
        text = request.get_json()["body"]
        if len(text) > 65_536:
            return _too_long()
        comment = _retarget(github_data.rest_example("commit-comment"), state.full_name)
        comment_id = next(self._ids)
        comment.update(
            id=comment_id,
            body=text,
            commit_id=commit_sha,
            path=None,
            position=None,
            line=None,
            html_url=f"{WEB}/{state.full_name}/commit/{commit_sha}#commitcomment-{comment_id}",
        )
        comment["user"] = {**comment["user"], **self._author(request)}
        comment["_repo"] = state.full_name
        self.commit_comments.append(comment)
        return _json(201, self._public(comment))

    def list_commit_comments(self, request: Request, owner: str, repo: str, commit_sha: str) -> Response:
        state = self.repos.get(f"{owner}/{repo}")
        if state is None:
            return _not_found()
        found = [
            self._public(c)
            for c in self.commit_comments
            if c["_repo"] == state.full_name and c["commit_id"] == commit_sha
        ]
        return self._page(request, found)

    def update_commit_comment(self, request: Request, owner: str, repo: str, comment_id: str) -> Response:
        found = [
            c for c in self.commit_comments if c["id"] == int(comment_id) and c["_repo"] == f"{owner}/{repo}"
        ]
        if not found:
            return _not_found()
        text = request.get_json()["body"]
        if len(text) > 65_536:
            return _too_long()
        found[0]["body"] = text
        return _json(200, self._public(found[0]))

    def list_issues(self, request: Request, owner: str, repo: str) -> Response:
        """The repository's issues, newest first (`state`: open by default, closed or all)."""
        state = self.repos.get(f"{owner}/{repo}")
        if state is None:
            return _not_found()
        wanted = request.args.get("state", "open")
        found = [
            issue
            for (name, _), issue in sorted(self.issues.items(), key=lambda item: -item[0][1])
            if name == state.full_name and wanted in ("all", issue["state"])
        ]
        return self._page(request, found)

    def create_reaction(self, request: Request, owner: str, repo: str, comment_id: str) -> Response:
        comment = self.comments.get(int(comment_id))
        if comment is None or comment["_issue"][0] != f"{owner}/{repo}":
            return _not_found()
        content, login = request.get_json()["content"], self._author(request)["login"]
        body = {**github_data.rest_example("reaction"), "content": content}
        body["user"] = {**body["user"], "login": login}
        seen = {"comment_id": int(comment_id), "login": login, "content": content}
        if seen in self.reactions:
            return _json(200, body)
        self.reactions.append(seen)
        return _json(201, body)

    def update_comment(self, request: Request, owner: str, repo: str, comment_id: str) -> Response:
        comment = self.comments.get(int(comment_id))
        if comment is None or comment["_issue"][0] != f"{owner}/{repo}":
            return _not_found()
        if comment["user"]["login"] != self._author(request)["login"]:
            return _json(403, {"message": "Resource not accessible by integration"})
        text = request.get_json()["body"]
        if len(text) > 65_536:
            return _too_long()
        comment["body"] = text
        comment["updated_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return _json(200, self._public(comment))

    # handlers: labels

    def list_labels(self, request: Request, owner: str, repo: str, issue_number: str) -> Response:
        found_pull = self._pull(owner, repo, issue_number)
        if found_pull is None:
            return _not_found()
        state, pull = found_pull
        return self._page(request, self._label_items(state.full_name, pull.number))

    def add_labels(self, request: Request, owner: str, repo: str, issue_number: str) -> Response:
        found_pull = self._pull(owner, repo, issue_number)
        if found_pull is None:
            return _not_found()
        state, pull = found_pull
        data = request.get_json()
        names = data["labels"] if isinstance(data, dict) else data
        names = [n if isinstance(n, str) else n["name"] for n in names]
        current = self.labels.setdefault((state.full_name, pull.number), [])
        current += [n for n in names if n not in current]
        return _json(200, self._label_items(state.full_name, pull.number))

    def remove_label(self, request: Request, owner: str, repo: str, issue_number: str, name: str) -> Response:
        found_pull = self._pull(owner, repo, issue_number)
        current = self.labels.get((f"{owner}/{repo}", int(issue_number)), [])
        if found_pull is None or name not in current:
            return _json(404, {"message": "Label does not exist"})
        state, pull = found_pull
        current.remove(name)
        return _json(200, self._label_items(state.full_name, pull.number))

    def _label_items(self, repo: str, number: int) -> list[dict]:
        template = github_data.rest_example("label-items")[0]
        return [
            {**template, "id": 200 + i, "name": name, "url": f"{GITHUB}/repos/{repo}/labels/{name}"}
            for i, name in enumerate(self.labels.get((repo, number), []))
        ]

    # handlers: checks and statuses

    def list_check_runs(self, request: Request, owner: str, repo: str, ref: str) -> Response:
        name = request.args.get("check_name")
        runs = [
            self._public(r)
            for r in self.check_runs.values()
            if r["_repo"] == f"{owner}/{repo}"
            and r["head_sha"] == ref
            and (name is None or r["name"] == name)
        ]
        return _json(200, {"total_count": len(runs), "check_runs": runs})

    def create_check_run(self, request: Request, owner: str, repo: str) -> Response:
        data = request.get_json()
        run = _retarget(
            github_data.rest_example("check-run-example-of-completed-conclusion"), f"{owner}/{repo}"
        )
        run_id = next(self._ids)
        run.update(
            id=run_id,
            name=data["name"],
            head_sha=data["head_sha"],
            status=data.get("status", "queued"),
            conclusion=data.get("conclusion"),
            url=f"{GITHUB}/repos/{owner}/{repo}/check-runs/{run_id}",
            details_url=data.get("details_url"),
            external_id=data.get("external_id"),
        )
        run["output"] = {**run["output"], **data.get("output", {})}
        run["_repo"] = f"{owner}/{repo}"
        self.check_runs[run_id] = run
        return _json(201, self._public(run))

    def update_check_run(self, request: Request, owner: str, repo: str, check_run_id: str) -> Response:
        run = self.check_runs.get(int(check_run_id))
        if run is None:
            return _not_found()
        data = request.get_json()
        run.update(
            {
                k: v
                for k, v in data.items()
                if k in ("status", "conclusion", "name", "details_url", "external_id")
            }
        )
        run["output"] = {**run["output"], **data.get("output", {})}
        return _json(200, self._public(run))

    def create_status(self, request: Request, owner: str, repo: str, sha: str) -> Response:
        data = request.get_json()
        status = _retarget(github_data.rest_example("status"), f"{owner}/{repo}")
        status.update(
            id=next(self._ids),
            state=data["state"],
            context=data.get("context", "default"),
            description=data.get("description"),
            target_url=data.get("target_url"),
        )
        self.statuses.append({**status, "_repo": f"{owner}/{repo}", "_sha": sha})
        return _json(201, status)

    # handlers: repositories, commits, collaborators

    def get_repo(self, request: Request, owner: str, repo: str) -> Response:
        state = self.repos.get(f"{owner}/{repo}")
        if state is None:
            return _not_found()
        body = _retarget(github_data.rest_example("full-repository"), state.full_name)
        body.update(full_name=state.full_name, default_branch=state.default_branch)
        return _json(200, body)

    def get_branch(self, request: Request, owner: str, repo: str, branch: str) -> Response:
        state = self.repos.get(f"{owner}/{repo}")
        if state is None or branch not in state.branches:
            return _json(404, {"message": "Branch not found"})
        body = _retarget(github_data.rest_example("branch-get"), state.full_name)
        body["name"] = branch
        body["commit"] = {**body["commit"], "sha": state.branches[branch]}
        return _json(200, body)

    def get_commit(self, request: Request, owner: str, repo: str, ref: str) -> Response:
        state = self.repos.get(f"{owner}/{repo}")
        sha = state.branches.get(ref, ref) if state is not None else ref
        if state is None or sha not in state.parents:
            return _json(422, {"message": f"No commit found for SHA: {ref}"})
        body = _retarget(github_data.rest_example("commit"), state.full_name)
        template = body["parents"][0]
        body.update(sha=sha, parents=[{**template, "sha": parent} for parent in state.parents[sha]])
        return _json(200, body)

    def compare(self, request: Request, owner: str, repo: str, basehead: str) -> Response:
        """``base...head`` over the recorded parents: ahead, behind, identical or diverged, with the
        commits head has that base lacks (paginated, oldest first); 404 for an unknown commit or
        two commits with no common ancestor, as GitHub answers."""
        state = self.repos.get(f"{owner}/{repo}")
        base_ref, dots, head_ref = basehead.partition("...")
        if state is None or not dots:
            return _not_found()
        base, head = self._resolve(state, base_ref), self._resolve(state, head_ref)
        if base is None or head is None:
            return _not_found()
        of_base, of_head = self._ancestors(state, base), self._ancestors(state, head)
        in_base, in_head = set(of_base), set(of_head)
        common = [sha for sha in of_head if sha in in_base]
        if not common:
            return _json(404, {"message": f"No common ancestor between {base_ref} and {head_ref}."})
        ahead = [sha for sha in reversed(of_head) if sha not in in_base]
        behind = [sha for sha in of_base if sha not in in_head]
        status = {
            (False, False): "identical",
            (True, False): "ahead",
            (False, True): "behind",
        }.get((bool(ahead), bool(behind)), "diverged")
        commit = _retarget(github_data.rest_example("commit"), state.full_name)  # the schema's commits
        commit["files"] = []
        page_url = f"{WEB}/{state.full_name}/compare/{basehead}"
        per_page, page = int(request.args.get("per_page", 250)), int(request.args.get("page", 1))
        body = {
            "url": f"{GITHUB}/repos/{state.full_name}/compare/{basehead}",
            "html_url": page_url,
            "permalink_url": f"{WEB}/{state.full_name}/compare/{base}...{head}",
            "diff_url": f"{page_url}.diff",
            "patch_url": f"{page_url}.patch",
            "base_commit": {**commit, "sha": base},
            "merge_base_commit": {**commit, "sha": common[0]},
            "status": status,
            "ahead_by": len(ahead),
            "behind_by": len(behind),
            "total_commits": len(ahead),
            "commits": [{**commit, "sha": sha} for sha in ahead[(page - 1) * per_page : page * per_page]],
            "files": [],
        }
        return _json(200, body)

    def commit_pulls(self, request: Request, owner: str, repo: str, commit_sha: str) -> Response:
        """The pull requests a commit belongs to: those whose head holds it (not their base), or
        that it merged; open ones too, as GitHub lists them."""
        state = self.repos.get(f"{owner}/{repo}")
        sha = self._resolve(state, commit_sha) if state is not None else None
        if state is None or sha is None:
            return _json(422, {"message": f"No commit found for SHA: {commit_sha}"})
        template = github_data.rest_example("pull-request")  # a superset of the list's items
        found = []
        for pull in state.pulls.values():
            mine = sha == pull.merge_sha or (
                sha in self._ancestors(state, pull.head_sha)
                and sha not in self._ancestors(state, pull.base_sha)
            )
            if not mine:
                continue
            body = _retarget(template, state.full_name, pull.number)
            body.update(number=pull.number, state=pull.state, merged_at=None, requested_teams=[])
            if pull.merged:
                body["merged_at"] = "2026-01-01T00:00:00Z"
            body["head"] = {**body["head"], "sha": pull.head_sha}
            body["base"] = {**body["base"], "ref": pull.base_ref, "sha": pull.base_sha}
            body["base"]["repo"] = {**body["base"]["repo"], "default_branch": state.default_branch}
            found.append(body)
        return self._page(request, found)

    @staticmethod
    def _resolve(state: RepoState, ref: str) -> str | None:
        """A branch's head, a known commit, or the one known commit a prefix of 7+ digits names."""
        if ref in state.branches:
            return state.branches[ref]
        known = set(state.parents) | {p for parents in state.parents.values() for p in parents}
        if ref in known:
            return ref
        matches = [sha for sha in known if len(ref) >= 7 and sha.startswith(ref)]
        return matches[0] if len(matches) == 1 else None

    @staticmethod
    def _ancestors(state: RepoState, sha: str) -> list[str]:
        """``sha`` and every commit it comes from (all parents), nearest first."""
        seen, order, queue = {sha}, [sha], [sha]
        while queue:
            for parent in state.parents.get(queue.pop(0), []):
                if parent not in seen:
                    seen.add(parent)
                    order.append(parent)
                    queue.append(parent)
        return order

    def get_permission(self, request: Request, owner: str, repo: str, username: str) -> Response:
        state = self.repos.get(f"{owner}/{repo}")
        if state is None or username not in state.permissions:
            return _not_found()
        permission = state.permissions[username]
        body = github_data.rest_example(
            "repository-collaborator-permission-response-if-user-has-admin-permissions"
        )
        body.update(permission="write" if permission == "maintain" else permission, role_name=permission)
        body["user"] = {**body["user"], "login": username}
        return _json(200, body)

    # handlers: GitHub Actions

    def dispatch_workflow(self, request: Request, owner: str, repo: str, workflow_id: str) -> Response:
        state = self.repos.get(f"{owner}/{repo}")
        workflow = self._workflow(state, workflow_id)
        if state is None or workflow is None:
            return _not_found()
        data = request.get_json()
        if "return_run_details" in data and not self.run_details:
            return _json(422, {"message": 'Invalid request.\n\n"return_run_details" is not a permitted key.'})
        if data["ref"] not in state.branches:
            return _json(422, {"message": f"No ref found for: {data['ref']}"})
        inputs = data.get("inputs") or {}
        unexpected = sorted(set(inputs) - set(workflow.inputs))
        if unexpected:
            return _json(422, {"message": f"Unexpected inputs provided: {unexpected}"})
        run = self._new_run(state, workflow, data["ref"], inputs)
        self.dispatches.append(
            {
                "repo": state.full_name,
                "workflow": workflow.file,
                "ref": data["ref"],
                "inputs": inputs,
                "run_id": run["id"],
            }
        )
        if not data.get("return_run_details"):
            return Response(status=204)
        return _json(200, {"workflow_run_id": run["id"], "run_url": run["url"], "html_url": run["html_url"]})

    def _workflow(self, state: RepoState | None, workflow_id: str) -> Workflow | None:
        if state is None:
            return None
        return next((w for w in state.workflows.values() if workflow_id in (w.file, str(w.id))), None)

    def _new_run(self, state: RepoState, workflow: Workflow, ref: str, inputs: dict) -> dict:
        run = _retarget(github_data.rest_example("workflow-run"), state.full_name)
        run_id = next(self._ids)
        title = re.sub(
            r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: str(inputs.get(m[1], "")), workflow.run_name
        )
        run.update(
            id=run_id,
            name="perfbot bench",
            display_title=title,
            event="workflow_dispatch",
            path=f".github/workflows/{workflow.file}",
            head_branch=ref,
            head_sha=state.branches[ref],
            status="queued",
            conclusion=None,
            workflow_id=workflow.id,
            run_attempt=1,
            url=f"{GITHUB}/repos/{state.full_name}/actions/runs/{run_id}",
            html_url=f"https://github.com/{state.full_name}/actions/runs/{run_id}",
            created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        run["_repo"] = state.full_name
        self.runs[run_id] = run
        return run

    def list_workflow_runs(self, request: Request, owner: str, repo: str, workflow_id: str) -> Response:
        state = self.repos.get(f"{owner}/{repo}")
        workflow = self._workflow(state, workflow_id)
        if state is None or workflow is None:
            return _not_found()
        event, branch = request.args.get("event"), request.args.get("branch")
        found = [
            self._public(r)
            for r in sorted(self.runs.values(), key=lambda r: -r["id"])
            if r["_repo"] == state.full_name
            and r["workflow_id"] == workflow.id
            and event in (None, r["event"])
            and branch in (None, r["head_branch"])
            and self.runs_listed
        ]
        per_page = int(request.args.get("per_page", 30))
        return _json(200, {"total_count": len(found), "workflow_runs": found[:per_page]})

    def get_run(self, request: Request, owner: str, repo: str, run_id: str) -> Response:
        run = self.runs.get(int(run_id))
        if run is None or run["_repo"] != f"{owner}/{repo}":
            return _not_found()
        return _json(200, self._public(run))

    def cancel_run(self, request: Request, owner: str, repo: str, run_id: str) -> Response:
        run = self.runs.get(int(run_id))
        if run is None or run["_repo"] != f"{owner}/{repo}":
            return _not_found()
        if run["status"] == "completed":
            return _json(409, {"message": "Cannot cancel a workflow run that is completed."})
        run.update(status="completed", conclusion="cancelled")
        return _json(202, {})

    def list_artifacts(self, request: Request, owner: str, repo: str, run_id: str) -> Response:
        found = [
            self._public(a)
            for a in self.artifacts.values()
            if a["_repo"] == f"{owner}/{repo}" and a["_run"] == int(run_id)
        ]
        return _json(200, {"total_count": len(found), "artifacts": found})

    def download_artifact(
        self, request: Request, owner: str, repo: str, artifact_id: str, archive_format: str
    ) -> Response:
        artifact = self.artifacts.get(int(artifact_id))
        if artifact is None or artifact["_repo"] != f"{owner}/{repo}" or archive_format != "zip":
            return _not_found()
        if artifact["expired"]:
            return _json(410, {"message": "Artifact has expired"})
        token = secrets.token_urlsafe(16)
        self.blobs[token] = (artifact["_zip"], time.monotonic() + 60)
        return Response(status=302, headers={"Location": f"{self.base_url}{BLOB_PREFIX}{token}"})

    def _blob(self, request: Request) -> Response:
        """The storage behind an artifact's redirect: the address alone grants access, for a
        minute; like GitHub's storage, it refuses requests that carry credentials."""
        with self._lock:
            self.requests.append(
                Recorded(
                    request.method,
                    request.path,
                    "",
                    None,
                    {"authorization": request.headers.get("Authorization", "")},
                )
            )
            found = self.blobs.get(request.path.removeprefix(BLOB_PREFIX))
        if "Authorization" in request.headers:
            return Response("Authentication information is not given in the correct format", 400)
        with self._lock:
            failing, self.blob_failures = self.blob_failures > 0, max(0, self.blob_failures - 1)
        if failing:
            return Response("Server busy", 503)
        if found is None or found[1] < time.monotonic():
            return Response("The specified blob does not exist or has expired", 404)
        return Response(found[0], 200, content_type="application/zip")

    # helpers

    def _pull(self, owner: str, repo: str, number: str) -> tuple[RepoState, Pull] | None:
        state = self.repos.get(f"{owner}/{repo}")
        pull = state.pulls.get(int(number)) if state is not None else None
        return None if state is None or pull is None else (state, pull)

    def _page(self, request: Request, items: list) -> Response:
        per_page = int(request.args.get("per_page", 30))
        page = int(request.args.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            query = request.args.to_dict()
            query.update(page=str(page + 1), per_page=str(per_page))
            link = f"{GITHUB}{request.path}?" + "&".join(f"{k}={v}" for k, v in query.items())
            headers["Link"] = f'<{link}>; rel="next"'
        return _json(200, chunk, headers)

    @staticmethod
    def _public(item: dict) -> dict:
        return {k: v for k, v in item.items() if not k.startswith("_")}


_ROUTES = [
    ("POST", "/app/installations/{installation_id}/access_tokens", "create_token"),
    ("GET", "/app", "get_app"),
    ("GET", "/repos/{owner}/{repo}", "get_repo"),
    ("GET", "/repos/{owner}/{repo}/branches/{branch}", "get_branch"),
    ("GET", "/repos/{owner}/{repo}/commits/{ref}", "get_commit"),
    ("GET", "/repos/{owner}/{repo}/compare/{basehead}", "compare"),
    ("GET", "/repos/{owner}/{repo}/commits/{commit_sha}/pulls", "commit_pulls"),
    ("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission", "get_permission"),
    ("POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", "create_reaction"),
    ("POST", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", "dispatch_workflow"),
    ("GET", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", "list_workflow_runs"),
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}", "get_run"),
    ("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/cancel", "cancel_run"),
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts", "list_artifacts"),
    ("GET", "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}", "download_artifact"),
    ("GET", "/user", "get_user"),
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", "get_pull"),
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files", "list_files"),
    ("GET", "/repos/{owner}/{repo}/contents/{path*}", "get_content"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments", "list_comments"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments", "create_comment"),
    ("GET", "/repos/{owner}/{repo}/issues", "list_issues"),
    ("POST", "/repos/{owner}/{repo}/issues", "create_issue"),
    ("PATCH", "/repos/{owner}/{repo}/issues/{issue_number}", "update_issue"),
    ("GET", "/repos/{owner}/{repo}/commits/{commit_sha}/comments", "list_commit_comments"),
    ("POST", "/repos/{owner}/{repo}/commits/{commit_sha}/comments", "create_commit_comment"),
    ("PATCH", "/repos/{owner}/{repo}/comments/{comment_id}", "update_commit_comment"),
    ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}", "update_comment"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/labels", "list_labels"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels", "add_labels"),
    ("DELETE", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", "remove_label"),
    ("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs", "list_check_runs"),
    ("POST", "/repos/{owner}/{repo}/check-runs", "create_check_run"),
    ("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}", "update_check_run"),
    ("POST", "/repos/{owner}/{repo}/statuses/{sha}", "create_status"),
    ("POST", "/app-manifests/{code}/conversions", "convert_manifest"),
]
# github.com's pages for the App's user authorization: outside the REST API, not validated.
_WEB_ROUTES = [
    ("GET", "/login/oauth/authorize", "authorize_page"),
    ("POST", "/login/oauth/authorize", "authorize"),
    ("POST", "/login/oauth/access_token", "access_token"),
    ("POST", "/settings/apps/new", "new_app_page"),
    ("POST", "/settings/apps/new/create", "create_app_from_manifest"),
]
_ORG_NEW_APP = re.compile(r"/organizations/(?P<org>[A-Za-z0-9-]{1,39})/settings/apps/new")


_API_PREFIXES = (
    "/repos/",
    "/app/",
    "/app-manifests/",
    "/user",
    "/login/",
    "/settings/",
    "/organizations/",
    BLOB_PREFIX,
)


def _shows_only(request: Request) -> bool:
    """The App registration page, which a form of the App's server posts its manifest to: it
    shows what would be created; creating it is a post of its own page."""
    return request.method == "POST" and (
        request.path == "/settings/apps/new" or _ORG_NEW_APP.fullmatch(request.path) is not None
    )


def _is_api(path: str) -> bool:
    return path == "/app" or path.startswith(_API_PREFIXES)


def _compile(template: str) -> re.Pattern[str]:
    pattern = re.sub(r"\{(\w+)\*\}", r"(?P<\1>.+)", template)
    return re.compile(re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern))


def _retarget(body: dict, repo: str, number: int | None = None) -> dict:
    """An example re-pointed from octocat/Hello-World or octo-org/octo-repo (and its #1347) to the
    emulated repo and PR."""
    text = json.dumps(body).replace(EXAMPLE_REPO, repo).replace(ACTIONS_EXAMPLE_REPO, repo)
    if number is not None:
        text = re.sub(r"/(pulls|issues|pull)/1347\b", rf"/\g<1>/{number}", text)
    return json.loads(text)


def _json(status: int, body, headers: dict | None = None) -> Response:
    return Response(json.dumps(body), status, headers=headers or {}, mimetype="application/json")


def _not_found() -> Response:
    return _json(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})


def _too_long() -> Response:
    return _json(
        422,
        {
            "message": "Validation Failed",
            "errors": [
                {
                    "resource": "IssueComment",
                    "code": "custom",
                    "field": "body",
                    "message": "body is too long (maximum is 65536 characters)",
                }
            ],
        },
    )


def _json_or_text(body: bytes):
    try:
        return json.loads(body) if body else None
    except ValueError:
        return body.decode("utf-8", errors="replace")


def wait_for(condition, timeout: float = 10.0, interval: float = 0.02) -> bool:
    """Poll ``condition`` until true or ``timeout``; for tests waiting on a queue consumer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())
