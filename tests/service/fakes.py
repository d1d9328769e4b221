"""In-memory fakes of the GitHub and queue ports that record what handlers asked for.

They follow the rules of the real adapters, so that a handler test cannot pass on behaviour
GitHub would refuse (tests/emulator/test_fakes_follow_github.py runs the same scenarios on
`FakeGitHub` and on `PyGithubClient` against the GitHub emulator). The store has no fake: the
service tests run on `SqlStore` over SQLite.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from bot.service.ports import CheckResult, GitHub, GitHubFactory, PullRequestGone, Queue

BOT_LOGIN = "perfbot[bot]"


@dataclass
class Comment:
    id: int
    author: str
    body: str


class FakeGitHub(GitHub):
    """One installation's view of GitHub: pull requests (head, diff), files, comments, check runs
    and labels. Only the bot's own marker comment is edited; a check run is one per (head, name),
    updated in place; only labels that start with the prefix are touched."""

    def __init__(self):
        self.heads: dict[tuple[str, int], str] = {}
        self.diffs: dict[tuple[str, int], str] = {}
        self.files: dict[tuple[str, str, str], str] = {}
        self.threads: dict[tuple[str, int], list[Comment]] = {}
        self.check_runs: dict[tuple[str, str, str], CheckResult] = {}
        self.labels: dict[tuple[str, int], set[str]] = {}
        self.file_reads: list[tuple[str, str, str]] = []
        self.permissions: dict[tuple[str, str], str] = {}  # (repo, login) -> admin | write | read
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
    def checks(self) -> list[tuple[str, CheckResult]]:
        """Every check run, as (repository, what it says), in the order they were created."""
        return [(repo, check) for (repo, _, _), check in self.check_runs.items()]

    # the port

    def pull_head_sha(self, repo, number):
        return self.heads[self._existing(repo, number)]

    def pull_diff(self, repo, number):
        return self.diffs[self._existing(repo, number)]

    def read_file(self, repo, path, ref):
        self.file_reads.append((repo, path, ref))
        return self.files.get((repo, path, ref))

    def upsert_comment(self, repo, number, marker, body):
        thread = self.threads.setdefault(self._existing(repo, number), [])
        for comment in thread:
            if comment.body.startswith(marker) and comment.author == BOT_LOGIN:
                comment.body = body
                return comment.id
        return self.add_comment(repo, number, BOT_LOGIN, body).id

    def publish_check(self, repo, check):
        self.check_runs[(repo, check.head_sha, check.name)] = check

    def sync_labels(self, repo, number, prefix, wanted):
        labels = self.labels.setdefault(self._existing(repo, number), set())
        labels -= {name for name in labels if name.startswith(prefix) and name != wanted}
        if wanted is not None:
            labels.add(wanted)

    def permission(self, repo, login):
        return self.permissions.get((repo, login), "none")

    def _existing(self, repo: str, number: int) -> tuple[str, int]:
        if (repo, number) not in self.heads:
            raise PullRequestGone(f"{repo}#{number}")
        return repo, number


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
