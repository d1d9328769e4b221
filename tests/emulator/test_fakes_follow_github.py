"""The fake GitHub of the service tests follows the rules of the real adapter: every scenario runs
on `FakeGitHub` and on `PyGithubClient` (App mode) against the GitHub emulator, and both must
end in the same state. A fake that is kinder than GitHub would let handler tests pass on
behaviour that fails in production."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.adapters.github_client import PyGithubFactory, retry_policy
from bot.core.checks import Check
from bot.core.config.schema import CONFIG_PATH
from bot.core.render.comment import MARKER
from bot.service.ports.github import ArtifactInvalid, DispatchRefused, GitHub, PullRequestGone
from bot.settings import Settings
from tests.emulator import live
from tests.service import diffs
from tests.service.fakes import BOT_LOGIN, FakeGitHub

REPO, NUMBER, MISSING = live.REPO, 3, 99
SHA, OTHER_SHA = "3" * 40, "4" * 40
PREFIX = "perf-risk: "
ISSUE_MARKER = "<!-- perfbot:culprit:" + SHA + " -->"


class FakeSide:
    def __init__(self):
        self.fake = FakeGitHub()
        self.github: GitHub = self.fake
        self.fake.heads[(REPO, NUMBER)] = SHA
        self.fake.diffs[(REPO, NUMBER)] = diffs.MEDIUM
        self.fake.files[(REPO, CONFIG_PATH, "main")] = diffs.BASE_CONFIG
        self.fake.branches[REPO] = ("main", OTHER_SHA)
        self.fake.parents[(REPO, OTHER_SHA)] = SHA

    def set_permission(self, login: str, permission: str) -> None:
        self.fake.permissions[(REPO, login)] = "write" if permission == "maintain" else permission

    def add_workflow(self, file: str) -> None:
        self.fake.workflows.add((REPO, file))

    def finish_run(self, run_id: int) -> None:
        found = self.fake.runs[run_id]
        found["run"] = replace(found["run"], status="completed", conclusion="success")

    def upload(self, run_id: int, name: str, data: bytes) -> None:
        self.fake.upload_artifact(REPO, run_id, name, data)

    def reactions(self, comment_id: int) -> list[str]:
        return [content for _, cid, content in self.fake.reactions if cid == comment_id]

    def bench_checks(self, sha: str) -> list[tuple[str, str, str | None]]:
        return [
            (c.status, c.conclusion, c.details_url)
            for c in self.fake.bench_checks.values()
            if c.head_sha == sha
        ]

    def all_checks(self, sha: str) -> list[tuple[str, str | None, str | None]]:
        return [
            (c.name, c.conclusion, c.external_id)
            for _, c in self.fake.check_runs.values()
            if c.head_sha == sha
        ]

    def plant_comment(self, author: str, body: str) -> None:
        self.fake.add_comment(REPO, NUMBER, author, body)

    def comments(self) -> list[tuple[str, str]]:
        return [(c.author, c.body) for c in self.fake.threads.get((REPO, NUMBER), [])]

    def checks(self, sha: str) -> list[tuple[str, str, str]]:
        return [
            (c.name, c.conclusion, c.title) for _, c in self.fake.check_runs.values() if c.head_sha == sha
        ]

    def set_labels(self, names: list[str]) -> None:
        self.fake.labels[(REPO, NUMBER)] = set(names)

    def commit_comments(self, sha: str) -> list[str]:
        return [body for repo, on, body in self.fake.commit_comments if (repo, on) == (REPO, sha)]

    def issues(self) -> list[tuple[str, str]]:
        return [issue for (repo, _), issue in self.fake.issues.items() if repo == REPO]

    def labels(self) -> set[str]:
        return self.fake.labels.get((REPO, NUMBER), set())


class EmulatedSide:
    def __init__(self, emulator, app_key: tuple[str, str]):
        self.emulator = emulator
        emulator.app_id, emulator.app_public_key = live.APP_ID, app_key[1]
        emulator.tokens.add("placeholder-so-that-auth-is-enforced")
        state = emulator.add_repo(REPO, "main")
        state.files[("main", CONFIG_PATH)] = diffs.BASE_CONFIG
        state.branches["main"] = OTHER_SHA
        state.parents[OTHER_SHA] = [SHA]
        emulator.add_pull(REPO, NUMBER, SHA, diffs.MEDIUM, base_sha="9" * 40)
        settings = Settings(app_id=live.APP_ID, private_key=app_key[0], github_api_url=emulator.base_url)
        factory = PyGithubFactory(settings, retry=retry_policy(total=2, backoff=0.05, secondary_wait=1))
        self.github = factory.for_installation(1)

    def plant_comment(self, author: str, body: str) -> None:
        self.emulator.add_comment(REPO, NUMBER, body, author)

    def set_permission(self, login: str, permission: str) -> None:
        self.emulator.repos[REPO].permissions[login] = permission

    def add_workflow(self, file: str) -> None:
        self.emulator.add_workflow(REPO, file)

    def finish_run(self, run_id: int) -> None:
        self.emulator.complete_run(run_id)

    def upload(self, run_id: int, name: str, data: bytes) -> None:
        self.emulator.upload_artifact(REPO, run_id, name, data)

    def reactions(self, comment_id: int) -> list[str]:
        return self.emulator.reactions_on(comment_id)

    def bench_checks(self, sha: str) -> list[tuple[str, str, str | None]]:
        return [
            (r["status"], r["conclusion"], r.get("details_url")) for r in self.emulator.checks_for(REPO, sha)
        ]

    def comments(self) -> list[tuple[str, str]]:
        return [(c["user"]["login"], c["body"]) for c in self.emulator.comments_on(REPO, NUMBER)]

    def checks(self, sha: str) -> list[tuple[str, str, str]]:
        return [
            (r["name"], r["conclusion"], r["output"]["title"]) for r in self.emulator.checks_for(REPO, sha)
        ]

    def all_checks(self, sha: str) -> list[tuple[str, str | None, str | None]]:
        return [
            (r["name"], r["conclusion"], r.get("external_id")) for r in self.emulator.checks_for(REPO, sha)
        ]

    def set_labels(self, names: list[str]) -> None:
        self.emulator.labels[(REPO, NUMBER)] = list(names)

    def commit_comments(self, sha: str) -> list[str]:
        return [c["body"] for c in self.emulator.commit_comments if c["commit_id"] == sha]

    def issues(self) -> list[tuple[str, str]]:
        return [(i["title"], i["body"]) for (repo, _), i in self.emulator.issues.items() if repo == REPO]

    def labels(self) -> set[str]:
        return set(self.emulator.labels.get((REPO, NUMBER), []))


@pytest.fixture(params=["fake", "pygithub"])
def side(request):
    if request.param == "fake":
        return FakeSide()
    return EmulatedSide(request.getfixturevalue("emulator"), request.getfixturevalue("app_key"))


def test_only_the_bots_own_marker_comment_is_edited(side):
    quoted = f"{MARKER}\nquoted by a person"
    side.plant_comment("mallory", quoted)
    first = side.github.upsert_comment(REPO, NUMBER, MARKER, f"{MARKER}\nfirst review")
    again = side.github.upsert_comment(REPO, NUMBER, MARKER, f"{MARKER}\nsecond review")
    assert first == again
    assert side.comments() == [("mallory", quoted), (BOT_LOGIN, f"{MARKER}\nsecond review")]


def test_a_commit_comment_and_an_issue_are_found_again_by_their_marker_not_made_twice(side):
    first = side.github.comment_on_commit(REPO, SHA, MARKER, f"{MARKER}\nfirst")
    again = side.github.comment_on_commit(REPO, SHA, MARKER, f"{MARKER}\nsecond")
    assert first == again and side.commit_comments(SHA) == [f"{MARKER}\nsecond"]
    number = side.github.upsert_issue(REPO, None, "first", f"one\n{ISSUE_MARKER}", ISSUE_MARKER)
    assert side.github.upsert_issue(REPO, None, "again", f"two\n{ISSUE_MARKER}", ISSUE_MARKER) == number
    assert side.issues() == [("again", f"two\n{ISSUE_MARKER}")]


def test_a_persons_commit_comment_or_issue_that_carries_the_marker_is_not_taken_for_ours(emulator, app_key):
    side = EmulatedSide(emulator, app_key)
    person = {"login": "mallory", "type": "User", "id": 9}
    quoted = f"{MARKER}\nquoted by a person"
    emulator.commit_comments.append(
        {"id": 900, "body": quoted, "commit_id": SHA, "user": person, "html_url": "x", "_repo": REPO}
    )
    emulator.issues[(REPO, 90)] = {
        "number": 90,
        "title": "mine",
        "body": f"quoting {ISSUE_MARKER}",
        "state": "open",
        "user": person,
    }
    side.github.comment_on_commit(REPO, SHA, MARKER, f"{MARKER}\nours")
    assert side.commit_comments(SHA) == [quoted, f"{MARKER}\nours"]
    assert side.github.upsert_issue(REPO, None, "ours", ISSUE_MARKER, ISSUE_MARKER) != 90
    assert emulator.issues[(REPO, 90)]["title"] == "mine"


def risk(sha: str, conclusion: str, title: str, summary: str) -> Check:
    return Check(name="perfbot / risk", head_sha=sha, conclusion=conclusion, title=title, summary=summary)


def test_a_check_is_one_per_head_and_name_and_is_updated_in_place(side):
    first = side.github.publish_check(REPO, risk(SHA, "neutral", "high", "first"))
    again = side.github.publish_check(REPO, risk(SHA, "success", "none", "second"))  # a retry: its id unknown
    side.github.publish_check(REPO, risk(OTHER_SHA, "neutral", "medium", "x"))
    assert first == again
    assert side.checks(SHA) == [("perfbot / risk", "success", "none")]
    assert side.checks(OTHER_SHA) == [("perfbot / risk", "neutral", "medium")]


def test_checks_of_one_name_are_told_apart_by_their_external_id(side):
    bench = Check(
        name="perfbot / bench",
        head_sha=SHA,
        status="in_progress",
        conclusion=None,
        title="running",
        summary="s",
        external_id="pb-1",
    )
    first = side.github.publish_check(REPO, bench)
    second = side.github.publish_check(REPO, replace(bench, external_id="pb-2"))
    side.github.publish_check(
        REPO, replace(bench, status="completed", conclusion="cancelled")
    )  # pb-1, id unknown
    assert first != second
    assert sorted(side.all_checks(SHA), key=str) == [
        ("perfbot / bench", "cancelled", "pb-1"),
        ("perfbot / bench", None, "pb-2"),
    ]


def test_only_labels_that_start_with_the_prefix_are_changed(side):
    side.set_labels(["bug", "perf-risk: low", "perf-riskless"])
    side.github.sync_labels(REPO, NUMBER, PREFIX, "perf-risk: high")
    assert side.labels() == {"bug", "perf-riskless", "perf-risk: high"}
    side.github.sync_labels(REPO, NUMBER, PREFIX, None)
    assert side.labels() == {"bug", "perf-riskless"}


def test_the_head_diff_and_files_are_read_and_a_missing_file_is_none(side):
    assert side.github.pull(REPO, NUMBER).head_sha == SHA
    assert side.github.pull_diff(REPO, NUMBER) == diffs.MEDIUM
    assert side.github.read_file(REPO, CONFIG_PATH, "main") == diffs.BASE_CONFIG
    assert side.github.read_file(REPO, "no/such/file.yml", "main") is None


@pytest.mark.parametrize(
    "call",
    [
        lambda github: github.pull(REPO, MISSING),
        lambda github: github.pull_diff(REPO, MISSING),
        lambda github: github.upsert_comment(REPO, MISSING, MARKER, MARKER),
        lambda github: github.sync_labels(REPO, MISSING, PREFIX, "perf-risk: high"),
    ],
    ids=["head", "diff", "comment", "labels"],
)
def test_a_pull_request_that_does_not_exist_is_gone(side, call):
    with pytest.raises(PullRequestGone):
        call(side.github)


def test_the_pull_request_the_bot_decides_on(side):
    pull = side.github.pull(REPO, NUMBER)
    assert (pull.number, pull.open, pull.head_sha, pull.base_sha, pull.fork) == (
        NUMBER,
        True,
        SHA,
        "9" * 40,
        False,
    )
    assert side.github.default_branch(REPO) == ("main", OTHER_SHA)
    assert side.github.first_parent(REPO, OTHER_SHA) == SHA
    with pytest.raises(PullRequestGone):
        side.github.pull(REPO, MISSING)


@pytest.mark.parametrize(
    "given, read",
    [("admin", "admin"), ("maintain", "write"), ("write", "write"), ("read", "read"), (None, "none")],
)
def test_permission_is_githubs_permission_field(side, given, read):
    if given is not None:
        side.set_permission("someone", given)
    assert side.github.permission(REPO, "someone") == read
    assert side.github.permission("nobody/nothing", "someone") == "none"


def test_the_bot_knows_the_login_it_comments_as(side):
    assert side.github.own_login() == BOT_LOGIN


def test_a_reaction_is_added_once_and_a_reply_is_a_new_comment_by_the_bot(side):
    side.plant_comment("maintainer", "/bench")
    comment_id = side.github.reply(REPO, NUMBER, "first reply")
    for _ in range(2):
        side.github.react(REPO, comment_id, "eyes")
    side.github.react(REPO, comment_id, "rocket")
    assert side.reactions(comment_id) == ["eyes", "rocket"]
    assert side.comments()[-1] == (BOT_LOGIN, "first reply")


def test_a_dispatch_names_its_run_which_is_found_by_correlation_id_and_cancelled_once(side):
    with pytest.raises(DispatchRefused) as refused:
        side.github.dispatch(REPO, "perfbot-bench.yml", "main", {"correlation-id": "pb-1"})
    assert refused.value.status == 404
    side.add_workflow("perfbot-bench.yml")
    run = side.github.dispatch(REPO, "perfbot-bench.yml", "main", {"correlation-id": "pb-1"})
    assert run is not None and run.id
    found = side.github.find_run(REPO, "perfbot-bench.yml", "pb-1")
    assert found is not None and found.id == run.id and found.event == "workflow_dispatch"
    assert side.github.find_run(REPO, "perfbot-bench.yml", "pb-2") is None
    side.github.cancel_run(REPO, run.id)
    side.github.cancel_run(REPO, run.id)  # finished already: left as it is


def test_artifacts_are_listed_and_downloaded_up_to_a_cap(side):
    side.add_workflow("perfbot-bench.yml")
    run = side.github.dispatch(REPO, "perfbot-bench.yml", "main", {"correlation-id": "pb-1"})
    side.finish_run(run.id)
    side.upload(run.id, "perfbot-results-pb-1", b"PK zip bytes")
    [artifact] = side.github.artifacts(REPO, run.id)
    assert (artifact.name, artifact.size, artifact.expired) == ("perfbot-results-pb-1", 12, False)
    assert side.github.download_artifact(REPO, artifact.id, 100) == b"PK zip bytes"
    with pytest.raises(ArtifactInvalid):
        side.github.download_artifact(REPO, artifact.id, 5)


def test_the_bench_check_starts_in_progress_and_is_concluded_in_place(side):
    check = Check(
        name="perfbot / bench",
        head_sha=SHA,
        status="in_progress",
        conclusion=None,
        title="Benchmarks running",
        summary="s",
        details_url="https://run/1",
        external_id="pb-1",
    )
    check_run_id = side.github.publish_check(REPO, check)
    side.github.publish_check(REPO, replace(check, status="completed", conclusion="neutral"), check_run_id)
    assert side.bench_checks(SHA) == [("completed", "neutral", "https://run/1")]
