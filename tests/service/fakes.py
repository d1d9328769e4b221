"""In-memory fakes that subclass the service's ports and record what handlers asked for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.service.ports import (
    CheckResult,
    Delivery,
    GitHub,
    GitHubFactory,
    Merge,
    PullRequestGone,
    Queue,
    Repository,
    Review,
    Store,
)


class FakeGitHub(GitHub):
    def __init__(self):
        self.heads: dict[tuple[str, int], str] = {}
        self.diffs: dict[tuple[str, int], str] = {}
        self.files: dict[tuple[str, str, str], str] = {}
        self.comments: dict[tuple[str, int], list[str]] = {}
        self.checks: list[tuple[str, CheckResult]] = []
        self.labels: dict[tuple[str, int], str | None] = {}
        self.file_reads: list[tuple[str, str, str]] = []

    def pull_head_sha(self, repo, number):
        if (repo, number) not in self.heads:
            raise PullRequestGone(f"{repo}#{number}")
        return self.heads[(repo, number)]

    def pull_diff(self, repo, number):
        return self.diffs[(repo, number)]

    def read_file(self, repo, path, ref):
        self.file_reads.append((repo, path, ref))
        return self.files.get((repo, path, ref))

    def upsert_comment(self, repo, number, marker, body):
        found = self.comments.setdefault((repo, number), [])
        for i, existing in enumerate(found):
            if existing.startswith(marker):
                found[i] = body
                return i + 1
        found.append(body)
        return len(found)

    def publish_check(self, repo, check):
        self.checks.append((repo, check))

    def sync_labels(self, repo, number, prefix, wanted):
        self.labels[(repo, number)] = wanted


class FakeGitHubFactory(GitHubFactory):
    def __init__(self, github: FakeGitHub | None = None):
        self.github = github or FakeGitHub()
        self.installations: list[int | None] = []

    def for_installation(self, installation_id):
        self.installations.append(installation_id)
        return self.github


class FakeQueue(Queue):
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


class FakeStore(Store):
    def __init__(self):
        self.deliveries: dict[int, dict] = {}
        self.repos: dict[int, Repository] = {}
        self.reviews: dict[tuple[str, int], Review] = {}
        self.merge_rows: dict[tuple[str, int], Merge] = {}

    def claim_delivery(self, hook_id, guid, event, action, payload):
        if any((d["hook_id"], d["guid"]) == (hook_id, guid) for d in self.deliveries.values()):
            return None
        delivery_id = len(self.deliveries) + 1
        self.deliveries[delivery_id] = dict(
            hook_id=hook_id,
            guid=guid,
            event=event,
            action=action,
            payload=payload,
            status="pending",
            started=None,
            attempts=0,
            received=datetime(2026, 1, 1, tzinfo=UTC),
            error=None,
        )
        return delivery_id

    def start_delivery(self, delivery_id, now, lease_s):
        d = self.deliveries[delivery_id]
        if d["status"] != "pending" or (d["started"] and d["started"] > now - timedelta(seconds=lease_s)):
            return None
        d["started"], d["attempts"] = now, d["attempts"] + 1
        return Delivery(
            delivery_id, d["hook_id"], d["guid"], d["event"], d["action"], d["payload"], d["attempts"]
        )

    def finish_delivery(self, delivery_id, status, error=None):
        self.deliveries[delivery_id].update(status=status, error=error)

    def release_delivery(self, delivery_id, error):
        self.deliveries[delivery_id].update(started=None, error=error)

    def stale_deliveries(self, now, older_than_s):
        cutoff = now - timedelta(seconds=older_than_s)
        return [
            i
            for i, d in self.deliveries.items()
            if d["status"] == "pending" and ((d["started"] or d["received"]) < cutoff)
        ]

    def prune_deliveries(self, now, drop_payload_after_s, forget_after_s):
        old = [i for i, d in self.deliveries.items()
               if d["status"] != "pending" and d["received"] < now - timedelta(seconds=forget_after_s)]
        for i in old:
            del self.deliveries[i]
        return len(old)

    def delivery_counts(self):
        counts: dict[str, int] = {}
        for d in self.deliveries.values():
            counts[d["status"]] = counts.get(d["status"], 0) + 1
        return counts

    def replace_installation(self, installation_id, repos):
        self.remove_installation(installation_id)
        self.add_repositories(installation_id, repos)

    def add_repositories(self, installation_id, repos):
        self.repos.update({r.id: r for r in repos})

    def remove_repositories(self, installation_id, repo_ids):
        for repo_id in repo_ids:
            self.repos.pop(repo_id, None)

    def remove_installation(self, installation_id):
        self.repos = {k: r for k, r in self.repos.items() if r.installation_id != installation_id}

    def repositories(self):
        return sorted(self.repos.values(), key=lambda r: r.full_name)

    def save_review(self, review):
        self.reviews[(review.repo, review.number)] = review

    def review_for(self, repo, number):
        return self.reviews.get((repo, number))

    def record_merge(self, merge):
        self.merge_rows[(merge.repo, merge.number)] = merge

    def merges(self, repo=None):
        return [m for m in self.merge_rows.values() if repo is None or m.repo == repo]

    def ping(self):
        pass
