"""The service's `GitHub` port over PyGithub: App or token auth, retries, a write budget."""

from __future__ import annotations

import functools
import threading
from typing import Any

from github import Auth, Github, GithubException, GithubIntegration, GithubRetry, UnknownObjectException
from github.Repository import Repository as GhRepository

from bot.service.ports import CheckResult, GitHub, GitHubFactory, PullRequestGone
from bot.settings import Settings

from .github_budget import WriteBudget

DIFF_MEDIA_TYPE = "application/vnd.github.diff"
_TOO_LARGE = (406, 422)  # what GitHub answers when a diff is too big to render


class SafeRetry(GithubRetry):
    """GithubRetry (5xx, primary and secondary rate limits), except a POST that got a 5xx:
    it may have taken effect, so the job retries it after looking at what exists instead."""

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if method == "POST" and status_code >= 500:
            return False
        return super().is_retry(method, status_code, has_retry_after)


def retry_policy(total: int = 5, backoff: float = 1.0, secondary_wait: float = 60.0) -> SafeRetry:
    return SafeRetry(
        total=total, backoff_factor=backoff, secondary_rate_wait=secondary_wait, max_rate_limit_wait=900
    )


class PyGithubFactory(GitHubFactory):
    """One authenticated client per installation (App mode) or one for the token."""

    def __init__(self, settings: Settings, retry: SafeRetry | None = None, timeout: int = 30):
        self.settings = settings
        self._common: dict[str, Any] = dict(
            base_url=settings.github_api_url,
            timeout=timeout,
            retry=retry or retry_policy(),
            seconds_between_requests=0,
            seconds_between_writes=0,
        )
        self._clients: dict[int | None, PyGithubClient] = {}
        self._lock = threading.Lock()
        self._integration = None
        if settings.app_credentials is not None:
            auth = Auth.AppAuth(*settings.app_credentials)
            self._integration = GithubIntegration(auth=auth, **self._common)

    def for_installation(self, installation_id: int | None) -> PyGithubClient:
        key = installation_id if self._integration is not None else None
        with self._lock:
            if key not in self._clients:
                self._clients[key] = PyGithubClient(
                    self._connect(key),
                    self.settings.mode == "app",
                    WriteBudget(self.settings.writes_per_minute),
                )
            return self._clients[key]

    def _connect(self, installation_id: int | None) -> Github:
        if self._integration is not None:
            if installation_id is None:
                raise PullRequestGone("App mode needs the installation of the event")
            # AppInstallationAuth renews its token by itself shortly before it expires.
            return self._integration.get_github_for_installation(installation_id)
        if self.settings.github_token is None:
            raise RuntimeError(
                "no GitHub credentials: set PERFBOT_APP_ID + PERFBOT_PRIVATE_KEY or PERFBOT_GITHUB_TOKEN"
            )
        return Github(auth=Auth.Token(self.settings.github_token), **self._common)


def _gone_on_404(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except UnknownObjectException as error:
            raise PullRequestGone(f"{method.__name__}: 404 from GitHub") from error

    return wrapper


class PyGithubClient(GitHub):
    def __init__(self, github: Github, app_mode: bool, budget: WriteBudget):
        # Lazy: a repository handle costs no request; attributes are fetched when read.
        self.github, self.app_mode, self.budget = github.withLazy(True), app_mode, budget
        self._login: str | None = None

    def _repo(self, repo: str) -> GhRepository:
        return self.github.get_repo(repo)

    @_gone_on_404
    def pull_head_sha(self, repo: str, number: int) -> str:
        return self._repo(repo).get_pull(number).head.sha

    @_gone_on_404
    def pull_diff(self, repo: str, number: int) -> str:
        url = f"{self._repo(repo).url}/pulls/{number}"
        try:
            _, data = self.github.requester.requestJsonAndCheck(
                "GET", url, headers={"Accept": DIFF_MEDIA_TYPE}
            )
        except GithubException as error:
            if error.status in _TOO_LARGE:
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

    def read_file(self, repo: str, path: str, ref: str) -> str | None:
        try:
            content = self._repo(repo).get_contents(path, ref=ref)
        except UnknownObjectException:
            return None
        if isinstance(content, list) or content.type != "file":
            return None
        return content.decoded_content.decode("utf-8", errors="replace")

    @_gone_on_404
    def upsert_comment(self, repo: str, number: int, marker: str, body: str) -> int:
        issue = self._repo(repo).get_issue(number)
        for comment in issue.get_comments():
            if (comment.body or "").startswith(marker) and self._is_ours(comment):
                if comment.body != body:
                    self.budget.take()
                    comment.edit(body)
                return comment.id
        self.budget.take()
        return issue.create_comment(body).id

    def _is_ours(self, comment) -> bool:
        """Written by this bot: anyone can start a comment with the marker, only we may edit ours."""
        if self.app_mode:
            return comment.user.type == "Bot"
        if self._login is None:
            self._login = self.github.get_user().login
        return comment.user.login == self._login

    @_gone_on_404
    def publish_check(self, repo: str, check: CheckResult) -> None:
        if self.app_mode:
            self._check_run(repo, check)
        else:
            self._commit_status(repo, check)

    def _check_run(self, repo: str, check: CheckResult) -> None:
        gh_repo = self._repo(repo)
        output: dict[str, Any] = {"title": check.title, "summary": check.summary}
        for run in gh_repo.get_commit(check.head_sha).get_check_runs(check_name=check.name):
            if run.conclusion != check.conclusion or (run.output.title, run.output.summary) != (
                check.title,
                check.summary,
            ):
                self.budget.take()
                run.edit(status="completed", conclusion=check.conclusion, output=output)
            return
        self.budget.take()
        gh_repo.create_check_run(
            name=check.name,
            head_sha=check.head_sha,
            status="completed",
            conclusion=check.conclusion,
            output=output,
        )

    def _commit_status(self, repo: str, check: CheckResult) -> None:
        # Commit statuses have no 'neutral'; the description carries the level.
        self.budget.take()
        self.github.requester.requestJsonAndCheck(
            "POST",
            f"{self._repo(repo).url}/statuses/{check.head_sha}",
            input={"state": "success", "context": check.name, "description": check.title[:140]},
        )

    @_gone_on_404
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

    def permission(self, repo: str, login: str) -> str:
        try:
            return self._repo(repo).get_collaborator_permission(login)
        except UnknownObjectException:  # no such repository or user: no permission
            return "none"
