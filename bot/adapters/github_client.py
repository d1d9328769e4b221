"""The service's `GitHub` port over PyGithub: App or token auth, retries, a write budget, and
GitHub's failures translated into the service's kinds at the edge: every public method of the
client is `classified` (the kinds themselves are decided in `github_errors`)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import requests
from github import Auth, Github, GithubException, GithubIntegration, GithubRetry, RateLimitExceededException
from github.Repository import Repository as GhRepository

from bot.core.bench import contract
from bot.core.bench.policy import CommitRange
from bot.core.checks import Check, commit_status
from bot.core.pulls import PullInfo
from bot.service.failures import Gone, InstallationGone, NoCredentials
from bot.service.ports.github import (
    ArtifactInvalid,
    ArtifactUnavailable,
    DispatchRefused,
    GitHub,
    GitHubFactory,
    PullRequestGone,
)
from bot.service.records import ArtifactRef, WorkflowRun
from bot.settings import Settings

from .github_budget import WriteBudget
from .github_errors import BY_APP, BY_INSTALLATION, BY_PERSONAL, Answer, answer, translating

DIFF_MEDIA_TYPE = "application/vnd.github.diff"
_TOO_LARGE = (Answer.NOT_ACCEPTABLE, Answer.INVALID)  # what GitHub answers when a diff is too big to render
_REFUSED = (Answer.FORBIDDEN, Answer.NOT_FOUND, Answer.INVALID)  # a dispatch GitHub will never accept
_UNKNOWN_KEY = (Answer.MALFORMED, Answer.INVALID)  # a body with a key this GitHub does not know
_NOTHING_TO_CANCEL = (Answer.NOT_FOUND, Answer.CONFLICT)  # a run gone, or finished already
_INSTALLATION_GONE = (Answer.FORBIDDEN, Answer.NOT_FOUND)  # asking for its token: suspended, or uninstalled
_RUNS_SCANNED = 100  # the newest dispatched runs of the workflow searched for a correlation id
_DOWNLOAD_CHUNK = 1 << 16


class SafeRetry(GithubRetry):
    """GithubRetry (5xx, primary and secondary rate limits), except a POST that got a 5xx:
    it may have taken effect, so the job retries it after looking at what exists instead."""

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if method == "POST" and status_code >= 500:
            return False
        return super().is_retry(method, status_code, has_retry_after)


# A rate limit whose reset is further away than this is not waited out inside a request (holding
# a consumer thread): the job is tried again after it instead (`Transient.retry_after`).
MAX_WAIT_IN_REQUEST_S = 60.0


def retry_policy(total: int = 5, backoff: float = 1.0, secondary_wait: float = 60.0) -> SafeRetry:
    return SafeRetry(
        total=total,
        backoff_factor=backoff,
        secondary_rate_wait=secondary_wait,
        max_rate_limit_wait=MAX_WAIT_IN_REQUEST_S,
    )


class PyGithubFactory(GitHubFactory):
    """Clients per thread: one per installation (App mode), or one for the token, in each thread.

    PyGithub keeps a persistent HTTP connection per client, and a connection answers one request at
    a time: a client shared by threads hands one thread's response to another. So every thread
    builds its own (the App's integration client too); what threads share is guarded: the write
    budget of each GitHub identity and the App's bot login."""

    def __init__(self, settings: Settings, retry: SafeRetry | None = None, timeout: int = 30):
        self.settings = settings
        self._common: dict[str, Any] = dict(
            base_url=settings.github_api_url,
            timeout=timeout,
            retry=retry or retry_policy(),
            seconds_between_requests=0,
            seconds_between_writes=0,
        )
        self._local = threading.local()
        self._lock = threading.Lock()
        self._budgets: dict[int | None, WriteBudget] = {}
        self._bot_login: str | None = None

    def for_installation(self, installation_id: int | None) -> PyGithubClient:
        key = installation_id if self.settings.app_credentials is not None else None
        clients: dict[int | None, PyGithubClient] = self._local.__dict__.setdefault("clients", {})
        if key not in clients:
            renew: set[int | None] = self._local.__dict__.setdefault("renew", set())
            clients[key] = PyGithubClient(
                self._connect(key),
                self.settings.mode == "app",
                self._budget(key),
                app_id=self.settings.app_id,
                bot_login=self.bot_login,
                timeout=self._common["timeout"],
                refused=functools.partial(self._refused, key),
                renewed=key in renew,
            )
            renew.discard(key)
        return clients[key]

    def _refused(self, key: int | None, client: PyGithubClient) -> bool:
        """``client`` got a 401: in App mode its installation token may have expired or been
        revoked early, so this thread's client is dropped and the next one asks for a new token
        (True), unless ``client`` is already such a renewed one that nothing succeeded through."""
        if self.settings.app_credentials is None or client.renewed:
            return False
        clients: dict[int | None, PyGithubClient] = self._local.__dict__.setdefault("clients", {})
        if clients.get(key) is client:
            del clients[key]
        self._local.__dict__.setdefault("renew", set()).add(key)
        return True

    def _budget(self, key: int | None) -> WriteBudget:
        with self._lock:
            if key not in self._budgets:
                self._budgets[key] = WriteBudget(self.settings.writes_per_minute)
            return self._budgets[key]

    def _integration(self) -> GithubIntegration | None:
        """This thread's client of the App itself (JWT-signed requests), None in token mode."""
        if self.settings.app_credentials is None:
            return None
        integration = self._local.__dict__.get("integration")
        if integration is None:
            auth = Auth.AppAuth(*self.settings.app_credentials)
            integration = self._local.integration = GithubIntegration(auth=auth, **self._common)
        return integration

    def bot_login(self) -> str | None:
        """The App's bot account, ``<slug>[bot]`` (GET /app, signed with the App's key), asked once."""
        integration = self._integration()
        if integration is None:
            return None
        with self._lock:
            known = self._bot_login
        if known is None:
            with translating("reading the App", BY_APP):
                slug = integration.get_app().slug
            known = f"{slug}[bot]"
            with self._lock:
                self._bot_login = known
        return known

    def _connect(self, installation_id: int | None) -> Github:
        integration = self._integration()
        if integration is not None:
            if installation_id is None:
                raise InstallationGone("App mode needs the installation of the event")
            # AppInstallationAuth renews its token by itself shortly before it expires. Asked for
            # here, so that a refusal says whose: the App's (its id or key) or the installation's.
            github = integration.get_github_for_installation(installation_id)
            auth = github.requester.auth
            with translating("asking for an installation token", BY_APP):
                try:
                    if auth is not None:
                        auth.token  # noqa: B018 - the property asks GitHub for the token
                except GithubException as error:
                    if answer(error) in _INSTALLATION_GONE:
                        raise InstallationGone(
                            f"the App's installation {installation_id} is gone or suspended ({error.status})"
                        ) from error
                    raise
            return github
        if self.settings.github_token is None:
            raise NoCredentials(
                "no GitHub credentials: set PERFBOT_APP_ID + PERFBOT_PRIVATE_KEY or PERFBOT_GITHUB_TOKEN"
            )
        return Github(auth=Auth.Token(self.settings.github_token), **self._common)


def classified(method: Callable | None = None, *, not_found: type[Gone] | None = None) -> Any:
    """A `PyGithubClient` method run in `translating`: GitHub's failures leave it as the service's
    kinds. ``not_found``: what a 404 to it means (`PullRequestGone`: the pull request, or its
    repository, is gone); by default a plain `Gone`. A success shows that a client made to replace
    one whose token GitHub refused works."""
    if method is None:
        return functools.partial(classified, not_found=not_found)

    @functools.wraps(method)
    def wrapper(self: PyGithubClient, *args: Any, **kwargs: Any) -> Any:
        with translating(method.__name__, self._whose, renew=lambda: self._refused(self)):
            try:
                result = method(self, *args, **kwargs)
            except GithubException as error:
                if not_found is not None and answer(error) is Answer.NOT_FOUND:
                    raise not_found(f"{method.__name__}: 404 from GitHub") from error
                raise
        self.renewed = False
        return result

    wrapper.classified = True  # type: ignore[attr-defined]  # what the tests look for on each method
    return wrapper


class PyGithubClient(GitHub):
    def __init__(
        self,
        github: Github,
        app_mode: bool,
        budget: WriteBudget,
        app_id: int | None = None,
        bot_login: Callable[[], str | None] = lambda: None,
        timeout: int = 30,
        refused: Callable[[PyGithubClient], bool] = lambda _: False,
        renewed: bool = False,
    ):
        # Lazy: a repository handle costs no request; attributes are fetched when read.
        self.github, self.app_mode, self.budget = github.withLazy(True), app_mode, budget
        self.app_id, self._bot_login, self.timeout = app_id, bot_login, timeout
        self._login: str | None = None
        self._refused = refused
        self.renewed = renewed  # made to replace a client whose token GitHub refused

    @property
    def _whose(self) -> str:
        """Whose credentials this client's requests carry (what a 401 to them means)."""
        return BY_INSTALLATION if self.app_mode else BY_PERSONAL

    def _repo(self, repo: str) -> GhRepository:
        return self.github.get_repo(repo)

    @classified(not_found=PullRequestGone)
    def pull_diff(self, repo: str, number: int) -> str:
        url = f"{self._repo(repo).url}/pulls/{number}"
        try:
            _, data = self.github.requester.requestJsonAndCheck(
                "GET", url, headers={"Accept": DIFF_MEDIA_TYPE}
            )
        except GithubException as error:
            if answer(error) in _TOO_LARGE:
                return self._diff_from_files(repo, number)
            raise
        return data["data"]

    def _diff_from_files(self, repo: str, number: int) -> str:
        """For a PR too large for the diff media type: the per-file patches GitHub still lists."""
        sections = []
        for f in self._repo(repo).get_pull(number).get_files():
            old = f.previous_filename or f.filename
            minus = "/dev/null" if f.status == "added" else f"a/{old}"
            plus = "/dev/null" if f.status == "removed" else f"b/{f.filename}"
            sections.append(f"diff --git a/{old} b/{f.filename}\n--- {minus}\n+++ {plus}\n{f.patch or ''}\n")
        return "".join(sections)

    @classified
    def read_file(self, repo: str, path: str, ref: str) -> str | None:
        try:
            content = self._repo(repo).get_contents(path, ref=ref)
        except GithubException as error:
            if answer(error) is Answer.NOT_FOUND:
                return None
            raise
        if isinstance(content, list) or content.type != "file":
            return None
        return content.decoded_content.decode("utf-8", errors="replace")

    @classified(not_found=PullRequestGone)
    def upsert_comment(
        self, repo: str, number: int, marker: str, body: str, create: bool = True
    ) -> int | None:
        issue = self._repo(repo).get_issue(number)
        for comment in issue.get_comments():
            if (comment.body or "").startswith(marker) and self._is_ours(comment):
                if comment.body != body:
                    self.budget.take()
                    comment.edit(body)
                return comment.id
        if not create:
            return None
        self.budget.take()
        return issue.create_comment(body).id

    def _is_ours(self, comment) -> bool:
        """Written by this bot: anyone can start a comment with the marker, only we may edit ours.

        In App mode that is a comment made through this App (``performed_via_github_app``), or by
        its bot account: not any App's bot."""
        if self.app_mode:
            app = comment.performed_via_github_app  # listed with the comment: no extra request
            if app is not None:
                return app.id == self.app_id
            return comment.user.type == "Bot" and comment.user.login == self._bot_login()
        return comment.user.login == self.own_login()

    @classified
    def own_login(self) -> str | None:
        if self.app_mode:
            return self._bot_login()
        if self._login is None:
            self._login = self.github.get_user().login
        return self._login

    @classified(not_found=PullRequestGone)
    def publish_check(self, repo: str, check: Check, check_run_id: int | None = None) -> int | None:
        if not self.app_mode:
            self._commit_status(repo, check)
            return None
        body: dict[str, Any] = {
            "status": check.status,
            "output": {"title": check.title, "summary": check.summary},
        }
        if check.conclusion is not None:
            body["conclusion"] = check.conclusion
        if check.details_url:
            body["details_url"] = check.details_url
        if check.external_id:
            body["external_id"] = check.external_id
        url = f"{self._repo(repo).url}/check-runs"
        if check_run_id is None:
            existing = self._check_run_of(repo, check)
            if existing is not None:
                if _says(existing, body):
                    return existing["id"]
                check_run_id = existing["id"]
        self.budget.take()
        if check_run_id is not None:
            _, data = self.github.requester.requestJsonAndCheck("PATCH", f"{url}/{check_run_id}", input=body)
        else:
            _, data = self.github.requester.requestJsonAndCheck(
                "POST", url, input={"name": check.name, "head_sha": check.head_sha, **body}
            )
        return data["id"]

    def _check_run_of(self, repo: str, check: Check) -> dict | None:
        """The head's check run of this name (and external id), if a former attempt made it."""
        _, data = self.github.requester.requestJsonAndCheck(
            "GET",
            f"{self._repo(repo).url}/commits/{check.head_sha}/check-runs",
            parameters={"check_name": check.name, "filter": "all", "per_page": 100},
        )
        return next(
            (
                run
                for run in data.get("check_runs") or []
                if check.external_id is None or run.get("external_id") == check.external_id
            ),
            None,
        )

    def _commit_status(self, repo: str, check: Check) -> None:
        state, description = commit_status(check)
        status: dict[str, Any] = {"state": state, "context": check.name, "description": description}
        if check.details_url:
            status["target_url"] = check.details_url
        self.budget.take()
        self.github.requester.requestJsonAndCheck(
            "POST", f"{self._repo(repo).url}/statuses/{check.head_sha}", input=status
        )

    @classified(not_found=PullRequestGone)
    def sync_labels(self, repo: str, number: int, prefix: str, wanted: str | None) -> None:
        issue = self._repo(repo).get_issue(number)
        names = [label.name for label in issue.get_labels()]
        for name in names:
            if name.startswith(prefix) and name != wanted:
                self.budget.take()
                issue.remove_from_labels(name)
        if wanted is not None and wanted not in names:
            self.budget.take()
            # The documented body is {"labels": [...]}; PyGithub's add_to_labels sends a bare list.
            self.github.requester.requestJsonAndCheck(
                "POST", f"{issue.url}/labels", input={"labels": [wanted]}
            )

    # benchmarks

    @classified(not_found=PullRequestGone)
    def pull(self, repo: str, number: int) -> PullInfo:
        _, data = self.github.requester.requestJsonAndCheck("GET", f"{self._repo(repo).url}/pulls/{number}")
        head_repo = (data["head"].get("repo") or {}).get("full_name")
        return PullInfo(
            repo=repo,
            number=data["number"],
            open=data["state"] == "open",
            draft=bool(data.get("draft")),
            head_sha=data["head"]["sha"],
            base_sha=data["base"]["sha"],
            head_repo=head_repo,
            author=(data.get("user") or {}).get("login", ""),
            html_url=data["html_url"],
        )

    @classified
    def permission(self, repo: str, login: str) -> str:
        try:
            return self._repo(repo).get_collaborator_permission(login)
        except GithubException as error:
            if answer(error) is Answer.NOT_FOUND:  # not a collaborator, or no such user
                return "none"
            raise

    @classified
    def react(self, repo: str, comment_id: int, content: str) -> None:
        self.budget.take()
        url = f"{self._repo(repo).url}/issues/comments/{comment_id}/reactions"
        self.github.requester.requestJsonAndCheck("POST", url, input={"content": content})

    @classified(not_found=PullRequestGone)
    def reply(self, repo: str, number: int, body: str) -> int:
        self.budget.take()
        _, data = self.github.requester.requestJsonAndCheck(
            "POST", f"{self._repo(repo).url}/issues/{number}/comments", input={"body": body}
        )
        return data["id"]

    @classified
    def comment_on_commit(self, repo: str, sha: str, marker: str, body: str) -> str:
        """Our comment found among the commit's first 100 (a commit gets few)."""
        url = self._repo(repo).url
        _, listed = self.github.requester.requestJsonAndCheck(
            "GET", f"{url}/commits/{sha}/comments", parameters={"per_page": 100}
        )
        for comment in listed or []:
            if (comment.get("body") or "").startswith(marker) and self._is_our_json(comment):
                if comment["body"] != body:
                    self.budget.take()
                    self.github.requester.requestJsonAndCheck(
                        "PATCH", f"{url}/comments/{comment['id']}", input={"body": body}
                    )
                return comment.get("html_url") or ""
        self.budget.take()
        _, data = self.github.requester.requestJsonAndCheck(
            "POST", f"{url}/commits/{sha}/comments", input={"body": body}
        )
        return data.get("html_url") or ""

    def _is_our_json(self, item: dict) -> bool:
        """`_is_ours` for an item read as JSON (a commit comment, an issue)."""
        app, user = item.get("performed_via_github_app"), item.get("user") or {}
        if self.app_mode:
            if app is not None:
                return app.get("id") == self.app_id
            return user.get("type") == "Bot" and user.get("login") == self._bot_login()
        return user.get("login") == self.own_login()

    @classified
    def upsert_issue(self, repo: str, number: int | None, title: str, body: str, marker: str) -> int:
        url = f"{self._repo(repo).url}/issues"
        if number is None:
            number = self._our_issue(url, marker)
        self.budget.take()
        if number is None:
            _, data = self.github.requester.requestJsonAndCheck(
                "POST", url, input={"title": title, "body": body}
            )
        else:
            _, data = self.github.requester.requestJsonAndCheck(
                "PATCH", f"{url}/{number}", input={"title": title, "body": body}
            )
        return data["number"]

    def _our_issue(self, url: str, marker: str) -> int | None:
        """Ours among the repository's 100 newest issues whose body holds ``marker``: one opened by
        a worker that died before it could store the number, seconds ago."""
        _, listed = self.github.requester.requestJsonAndCheck(
            "GET", url, parameters={"state": "all", "sort": "created", "direction": "desc", "per_page": 100}
        )
        for issue in listed or []:
            if (
                "pull_request" not in issue
                and marker in (issue.get("body") or "")
                and self._is_our_json(issue)
            ):
                return int(issue["number"])
        return None

    @classified
    def default_branch(self, repo: str) -> tuple[str, str]:
        url = self._repo(repo).url
        _, data = self.github.requester.requestJsonAndCheck("GET", url)
        branch = data["default_branch"]
        _, head = self.github.requester.requestJsonAndCheck("GET", f"{url}/branches/{quote(branch, safe='')}")
        return branch, head["commit"]["sha"]

    @classified
    def first_parent(self, repo: str, sha: str) -> str | None:
        _, data = self.github.requester.requestJsonAndCheck("GET", f"{self._repo(repo).url}/commits/{sha}")
        parents = data.get("parents") or []
        return parents[0]["sha"] if parents else None

    @classified
    def compare(self, repo: str, base: str, head: str) -> CommitRange | None:
        # One commit per page: the counts are the whole range's, the list is not needed.
        url = f"{self._repo(repo).url}/compare/{quote(base, safe='')}...{quote(head, safe='')}"
        try:
            _, data = self.github.requester.requestJsonAndCheck("GET", url, parameters={"per_page": 1})
        except GithubException as error:
            if answer(error) is Answer.NOT_FOUND:
                return None
            raise
        return CommitRange(str(data["status"]), int(data["ahead_by"]), int(data["behind_by"]))

    @classified
    def pull_of_commit(self, repo: str, sha: str) -> tuple[int, str | None] | None:
        url = f"{self._repo(repo).url}/commits/{quote(sha, safe='')}/pulls"
        try:
            _, listed = self.github.requester.requestJsonAndCheck("GET", url, parameters={"per_page": 100})
        except GithubException as error:
            if answer(error) in (Answer.NOT_FOUND, Answer.INVALID, Answer.CONFLICT):
                return None
            raise
        for pull in listed or []:
            base = pull.get("base") or {}
            default = (base.get("repo") or {}).get("default_branch")
            if pull.get("merged_at") and default and base.get("ref") == default:
                return int(pull["number"]), pull.get("html_url")
        return None

    @classified
    def dispatch(self, repo: str, workflow: str, ref: str, inputs: dict[str, str]) -> WorkflowRun | None:
        """Ask for the run's details first; GitHub Enterprise Server versions that do not know
        ``return_run_details`` refuse the key, and are asked again without it."""
        url = f"{self._repo(repo).url}/actions/workflows/{quote(workflow, safe='')}/dispatches"
        body: dict[str, Any] = {"ref": ref, "inputs": inputs, "return_run_details": True}
        try:
            data = self._dispatch(url, body)
        except GithubException as error:
            if answer(error) not in _UNKNOWN_KEY or "return_run_details" not in str(error.data):
                raise _refusal(error) from error
            del body["return_run_details"]
            try:
                data = self._dispatch(url, body)
            except GithubException as again:
                raise _refusal(again) from again
        if not isinstance(data, dict) or "workflow_run_id" not in data:
            return None
        return WorkflowRun(
            id=data["workflow_run_id"],
            html_url=data.get("html_url", ""),
            status="queued",
            conclusion=None,
            display_title="",
            event="workflow_dispatch",
            path=f".github/workflows/{workflow}",
        )

    def _dispatch(self, url: str, body: dict[str, Any]) -> Any:
        self.budget.take()
        try:
            _, data = self.github.requester.requestJsonAndCheck("POST", url, input=body)
        except requests.exceptions.RetryError:
            # The retry policy never repeats a POST that failed on the server, so what ran out was
            # its patience with a rate limit: GitHub did not start the workflow.
            raise DispatchRefused(
                403, "GitHub's rate limit for starting workflows was reached; try again in a few minutes"
            ) from None
        return data

    @classified
    def find_run(self, repo: str, workflow: str, correlation_id: str) -> WorkflowRun | None:
        url = f"{self._repo(repo).url}/actions/workflows/{quote(workflow, safe='')}/runs"
        try:
            _, data = self.github.requester.requestJsonAndCheck(
                "GET", url, parameters={"event": "workflow_dispatch", "per_page": _RUNS_SCANNED}
            )
        except GithubException as error:
            if answer(error) is Answer.NOT_FOUND:  # no such workflow (any more): no such run either
                return None
            raise
        for run in data.get("workflow_runs") or []:
            if contract.correlation_in((run.get("display_title") or "").split("\n")[0]) == correlation_id:
                return _workflow_run(run)
        return None

    @classified
    def cancel_run(self, repo: str, run_id: int) -> None:
        self.budget.take()
        try:
            url = f"{self._repo(repo).url}/actions/runs/{run_id}/cancel"
            self.github.requester.requestJsonAndCheck("POST", url)
        except GithubException as error:
            if answer(error) not in _NOTHING_TO_CANCEL:
                raise

    @classified
    def artifacts(self, repo: str, run_id: int) -> list[ArtifactRef]:
        _, data = self.github.requester.requestJsonAndCheck(
            "GET", f"{self._repo(repo).url}/actions/runs/{run_id}/artifacts", parameters={"per_page": 100}
        )
        return [
            ArtifactRef(a["id"], a["name"], a.get("size_in_bytes") or 0, bool(a.get("expired")))
            for a in data.get("artifacts") or []
        ]

    @classified
    def download_artifact(self, repo: str, artifact_id: int, max_bytes: int) -> bytes:
        """GitHub answers with a redirect to a short-lived storage URL, fetched without our
        credentials (it is another host, and the URL itself grants access), size-capped."""
        url = f"{self._repo(repo).url}/actions/artifacts/{artifact_id}/zip"
        status, headers, body = self.github.requester.requestJson("GET", url)
        location = {k.lower(): v for k, v in headers.items()}.get("location")
        if status != 302 or not location:
            raise ArtifactInvalid(f"GitHub answered {status} instead of the artifact's download address")
        try:
            with requests.get(location, stream=True, timeout=self.timeout, allow_redirects=True) as response:
                if response.status_code >= 400:
                    raise ArtifactUnavailable(f"the artifact's storage answered {response.status_code}")
                declared = _content_length(response.headers)
                if declared > max_bytes:
                    raise ArtifactInvalid(
                        f"the artifact is {declared:,} bytes; at most {max_bytes:,} are read"
                    )
                content = bytearray()
                for chunk in response.iter_content(_DOWNLOAD_CHUNK):
                    content += chunk
                    if len(content) > max_bytes:
                        raise ArtifactInvalid(f"the artifact is larger than {max_bytes:,} bytes")
        except requests.RequestException as error:
            # The message of a requests error quotes the address, and the address is a credential.
            raise ArtifactUnavailable(f"the artifact's download broke off ({type(error).__name__})") from None
        return bytes(content)


def _content_length(headers: Any) -> int:
    """The size the artifact's storage declares (0 when it declares none: the read is capped anyway)."""
    try:
        return int(headers.get("Content-Length") or 0)
    except ValueError:
        raise ArtifactInvalid("the artifact's storage declared a length that is not a number") from None


def _workflow_run(run: dict) -> WorkflowRun:
    return WorkflowRun(
        id=run["id"],
        html_url=run.get("html_url", ""),
        status=run.get("status", ""),
        conclusion=run.get("conclusion"),
        display_title=run.get("display_title") or "",
        event=run.get("event", ""),
        path=run.get("path", ""),
        run_attempt=run.get("run_attempt") or 1,
    )


def _says(run: dict, body: dict[str, Any]) -> bool:
    """Whether a listed check run already says what ``body`` would make it say."""
    output = run.get("output") or {}
    return (run.get("status"), run.get("conclusion"), output.get("title"), output.get("summary")) == (
        body["status"],
        body.get("conclusion"),
        body["output"]["title"],
        body["output"]["summary"],
    )


def _refusal(error: GithubException) -> Exception:
    """A refusal GitHub will repeat (no such workflow, inputs it rejects, no permission, its rate
    limit once the client's own waiting is spent) as `DispatchRefused`; anything else as it is."""
    message = error.data.get("message") if isinstance(error.data, dict) else None
    if isinstance(error, RateLimitExceededException):
        return DispatchRefused(error.status, "GitHub's rate limit for starting workflows was reached")
    if answer(error) in _REFUSED:
        return DispatchRefused(error.status, str(message or "refused"))
    return error
