"""In-memory fakes of the GitHub and queue ports that record what handlers asked for.

They follow the rules of the real adapters, so that a handler test cannot pass on behaviour
GitHub would refuse (tests/emulator/test_fakes_follow_github.py runs the same scenarios on
`FakeGitHub` and on `PyGithubClient` against the GitHub emulator). The store has no fake: the
service tests run on `SqlStore` over SQLite.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from bot.core.bench import contract
from bot.core.bench.policy import CommitRange
from bot.core.checks import Check
from bot.core.pulls import PullInfo
from bot.service.ports.github import ArtifactInvalid, DispatchRefused, GitHub, GitHubFactory, PullRequestGone
from bot.service.ports.queue import Queue
from bot.service.records import ArtifactRef, WorkflowRun

BOT_LOGIN = "perfbot[bot]"


@dataclass
class Comment:
    id: int
    author: str
    body: str


class FakeGitHub(GitHub):
    """One installation's view of GitHub: pull requests (head, base, fork, author, diff), files,
    comments and reactions, check runs, labels, permissions, and GitHub Actions (dispatches, runs,
    artifacts). Only the bot's own marker comment is edited; a check run is found again by its id,
    else by (head, name, external id), and updated in place; only labels that start with the prefix
    are touched; a reaction is added once; a dispatch of a workflow that does not exist is refused;
    a finished run is not cancelled again. ``calls`` records every call of the port, in order."""

    def __init__(self, app_mode: bool = True, login: str = BOT_LOGIN):
        self.app_mode, self.login = app_mode, login
        self.run_details = True  # False: the dispatch API names no run (older GitHub Enterprise Server)
        self.calls: list[tuple[str, tuple]] = []
        self.heads: dict[tuple[str, int], str] = {}
        self.diffs: dict[tuple[str, int], str] = {}
        self.files: dict[tuple[str, str, str], str] = {}
        self.threads: dict[tuple[str, int], list[Comment]] = {}
        self.check_runs: dict[int, tuple[str, Check]] = {}
        self.statuses: list[tuple[str, Check]] = []
        self.labels: dict[tuple[str, int], set[str]] = {}
        self.file_reads: list[tuple[str, str, str]] = []
        self.pulls: dict[tuple[str, int], PullInfo] = {}  # what differs from a plain same-repo PR
        self.permissions: dict[tuple[str, str], str] = {}
        self.reactions: list[tuple[str, int, str]] = []
        self.branches: dict[str, tuple[str, str]] = {}  # repo -> (default branch, its head)
        self.parents: dict[tuple[str, str], str] = {}
        # The pull requests GitHub associates with a commit: (number, url, base branch, merged).
        self.commit_pulls: dict[tuple[str, str], list[tuple[int, str | None, str, bool]]] = {}
        self.workflows: set[tuple[str, str]] = set()
        self.dispatches: list[dict] = []
        self.runs: dict[int, dict] = {}
        self.archives: dict[tuple[str, int], list[tuple[ArtifactRef, bytes]]] = {}
        self.commit_comments: list[tuple[str, str, str]] = []
        self.issues: dict[tuple[str, int], tuple[str, str]] = {}
        self._ids = itertools.count(1)

    # what tests arrange and look at

    def add_comment(self, repo: str, number: int, author: str, body: str) -> Comment:
        comment = Comment(next(self._ids), author, body)
        self.threads.setdefault((repo, number), []).append(comment)
        return comment

    @property
    def comments(self) -> dict[tuple[str, int], list[str]]:
        """The bodies of every comment (anyone's), by pull request, oldest first."""
        return {key: [c.body for c in thread] for key, thread in self.threads.items()}

    @property
    def checks(self) -> list[tuple[str, Check]]:
        """Every risk check run, as (repository, what it says now), in the order they were created."""
        return [(repo, check) for repo, check in self.check_runs.values() if check.name == "perfbot / risk"]

    @property
    def bench_checks(self) -> dict[int, Check]:
        """Every `perfbot / bench` check run by id, as it stands now."""
        return {i: check for i, (_, check) in self.check_runs.items() if check.name == "perfbot / bench"}

    def count(self, *names: str) -> int:
        """How many calls of these port methods were made."""
        return sum(1 for name, _ in self.calls if name in names)

    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        if name in _PORT_METHODS:
            calls = object.__getattribute__(self, "calls")

            def recorded(*args, **kwargs):
                calls.append((name, args))
                return value(*args, **kwargs)

            return recorded
        return value

    # the port

    def pull_diff(self, repo, number):
        return self.diffs[self._existing(repo, number)]

    def read_file(self, repo, path, ref):
        self.file_reads.append((repo, path, ref))
        return self.files.get((repo, path, ref))

    def upsert_comment(self, repo, number, marker, body, create=True):
        thread = self.threads.setdefault(self._existing(repo, number), [])
        for comment in thread:
            if comment.body.startswith(marker) and comment.author == self.login:
                comment.body = body
                return comment.id
        if not create:
            return None
        return self.add_comment(repo, number, self.login, body).id

    def publish_check(self, repo, check, check_run_id=None):
        if not self.app_mode:
            self.statuses.append((repo, check))
            return None
        if check_run_id is None:
            check_run_id = next(
                (
                    i
                    for i, (r, c) in self.check_runs.items()
                    if (r, c.head_sha, c.name) == (repo, check.head_sha, check.name)
                    and (check.external_id is None or c.external_id == check.external_id)
                ),
                None,
            )
        if check_run_id is None:
            check_run_id = next(self._ids)
        self.check_runs[check_run_id] = (repo, check)
        return check_run_id

    def own_login(self):
        return self.login

    def sync_labels(self, repo, number, prefix, wanted):
        labels = self.labels.setdefault(self._existing(repo, number), set())
        labels -= {name for name in labels if name.startswith(prefix) and name != wanted}
        if wanted is not None:
            labels.add(wanted)

    def pull(self, repo, number):
        key = self._existing(repo, number)
        default = PullInfo(
            repo=repo,
            number=number,
            open=True,
            draft=False,
            head_sha=self.heads[key],
            base_sha="9" * 40,
            head_repo=repo,
            author="octocat",
            html_url=f"https://github.com/{repo}/pull/{number}",
        )
        return replace(self.pulls.get(key, default), head_sha=self.heads[key])

    def permission(self, repo, login):
        return self.permissions.get((repo, login), "none")

    def react(self, repo, comment_id, content):
        if (repo, comment_id, content) not in self.reactions:
            self.reactions.append((repo, comment_id, content))

    def reply(self, repo, number, body):
        self._existing(repo, number)
        return self.add_comment(repo, number, self.login, body).id

    def comment_on_commit(self, repo, sha, marker, body):
        for index, (r, s, text) in enumerate(self.commit_comments):
            if (r, s) == (repo, sha) and text.startswith(marker):
                self.commit_comments[index] = (repo, sha, body)
                break
        else:
            self.commit_comments.append((repo, sha, body))
            index = len(self.commit_comments) - 1
        return f"https://github.com/{repo}/commit/{sha}#commitcomment-{index + 1}"

    def upsert_issue(self, repo, number, title, body, marker):
        if number is None:
            number = next((n for (r, n), (_, b) in self.issues.items() if r == repo and marker in b), None)
        if number is None:
            number = 10_000 + len(self.issues)
        self.issues[(repo, number)] = (title, body)
        return number

    def default_branch(self, repo):
        return self.branches[repo]

    def first_parent(self, repo, sha):
        return self.parents.get((repo, sha))

    def compare(self, repo, base, head):
        """From ``parents`` (first parents only): ahead when BASE is among HEAD's ancestors, behind
        when HEAD is among BASE's, identical when one commit; None, as GitHub's 404, otherwise."""
        if base == head:
            return CommitRange("identical", 0, 0)
        for status, start, end in (("ahead", head, base), ("behind", base, head)):
            steps, sha = 0, start
            while sha is not None and steps <= 100_000:
                if sha == end:
                    return CommitRange(status, *((steps, 0) if status == "ahead" else (0, steps)))
                sha, steps = self.parents.get((repo, sha)), steps + 1
        return None

    def pull_of_commit(self, repo, sha):
        default = self.branches.get(repo, ("main", ""))[0]
        for number, url, base_ref, merged in self.commit_pulls.get((repo, sha), []):
            if merged and base_ref == default:
                return number, url
        return None

    def dispatch(self, repo, workflow, ref, inputs):
        if (repo, workflow) not in self.workflows:
            raise DispatchRefused(404, "Not Found")
        run = WorkflowRun(
            id=next(self._ids),
            html_url=f"https://github.com/{repo}/actions/runs/x",
            status="queued",
            conclusion=None,
            display_title=contract.RUN_NAME.format(correlation_id=inputs.get("correlation-id", "")),
            event="workflow_dispatch",
            path=f".github/workflows/{workflow}",
        )
        self.runs[run.id] = {"repo": repo, "run": run}
        self.dispatches.append(
            {"repo": repo, "workflow": workflow, "ref": ref, "inputs": inputs, "run_id": run.id}
        )
        return run if self.run_details else None

    def find_run(self, repo, workflow, correlation_id):
        if not self.run_details:
            return None  # GitHub lists a dispatched run a moment after accepting it
        return next(
            (
                r["run"]
                for r in reversed(self.runs.values())
                if r["repo"] == repo
                and r["run"].path == f".github/workflows/{workflow}"
                and contract.correlation_in(r["run"].display_title) == correlation_id
            ),
            None,
        )

    def cancel_run(self, repo, run_id):
        found = self.runs.get(run_id)
        if found is not None and found["run"].status != "completed":
            found["run"] = replace(found["run"], status="completed", conclusion="cancelled")

    def artifacts(self, repo, run_id):
        return [ref for ref, _ in self.archives.get((repo, run_id), [])]

    def download_artifact(self, repo, artifact_id, max_bytes):
        for items in self.archives.values():
            for ref, data in items:
                if ref.id == artifact_id:
                    if len(data) > max_bytes:
                        raise ArtifactInvalid(f"the artifact is larger than {max_bytes:,} bytes")
                    return data
        raise ArtifactInvalid("no such artifact")

    # what tests arrange

    def upload_artifact(self, repo: str, run_id: int, name: str, data: bytes) -> ArtifactRef:
        ref = ArtifactRef(next(self._ids), name, len(data), False)
        self.archives.setdefault((repo, run_id), []).append((ref, data))
        return ref

    def _existing(self, repo: str, number: int) -> tuple[str, int]:
        if (repo, number) not in self.heads:
            raise PullRequestGone(f"{repo}#{number}")
        return repo, number


_PORT_METHODS = frozenset(name for name in GitHub.__abstractmethods__)


class FakeGitHubFactory(GitHubFactory):
    def __init__(self, github: FakeGitHub | None = None):
        self.github = github or FakeGitHub()
        self.installations: list[int | None] = []

    def for_installation(self, installation_id):
        self.installations.append(installation_id)
        return self.github


class FakeQueue(Queue):
    """Records enqueued delivery ids; nothing consumes them."""

    def __init__(self, broken: bool = False):
        self.jobs: list[int] = []
        self.broken = broken

    def enqueue(self, delivery_id):
        if self.broken:
            raise ConnectionError("queue down")
        self.jobs.append(delivery_id)

    def pending(self):
        return len(self.jobs)

    def ping(self):
        if self.broken:
            raise ConnectionError("queue down")
