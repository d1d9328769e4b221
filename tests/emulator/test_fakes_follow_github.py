"""The fake GitHub of the service tests follows the rules of the real adapter: every scenario runs
on `FakeGitHub` and on `PyGithubClient` (App mode) against the GitHub emulator, and both must
end in the same state. A fake that is kinder than GitHub would let handler tests pass on
behaviour that fails in production."""

from __future__ import annotations

import pytest

from bot.adapters.github_client import PyGithubFactory, retry_policy
from bot.core.config.schema import CONFIG_PATH
from bot.core.render.comment import MARKER
from bot.service.ports import CheckResult, GitHub, PullRequestGone
from bot.settings import Settings
from tests.emulator import live
from tests.service import diffs
from tests.service.fakes import BOT_LOGIN, FakeGitHub

REPO, NUMBER, MISSING = live.REPO, 3, 99
SHA, OTHER_SHA = "3" * 40, "4" * 40
PREFIX = "perf-risk: "


class FakeSide:
    def __init__(self):
        self.fake = FakeGitHub()
        self.github: GitHub = self.fake
        self.fake.heads[(REPO, NUMBER)] = SHA
        self.fake.diffs[(REPO, NUMBER)] = diffs.MEDIUM
        self.fake.files[(REPO, CONFIG_PATH, "main")] = diffs.BASE_CONFIG

    def plant_comment(self, author: str, body: str) -> None:
        self.fake.add_comment(REPO, NUMBER, author, body)

    def comments(self) -> list[tuple[str, str]]:
        return [(c.author, c.body) for c in self.fake.threads.get((REPO, NUMBER), [])]

    def checks(self, sha: str) -> list[tuple[str, str, str]]:
        return [(c.name, c.conclusion, c.title) for c in self.fake.check_runs.values() if c.head_sha == sha]

    def set_labels(self, names: list[str]) -> None:
        self.fake.labels[(REPO, NUMBER)] = set(names)

    def labels(self) -> set[str]:
        return self.fake.labels.get((REPO, NUMBER), set())

    def grant(self, login: str, permission: str) -> None:
        self.fake.permissions[(REPO, login)] = permission


class EmulatedSide:
    def __init__(self, emulator, app_key: tuple[str, str]):
        self.emulator = emulator
        emulator.app_id, emulator.app_public_key = live.APP_ID, app_key[1]
        emulator.tokens.add("placeholder-so-that-auth-is-enforced")
        emulator.add_repo(REPO, "main").files[("main", CONFIG_PATH)] = diffs.BASE_CONFIG
        emulator.add_pull(REPO, NUMBER, SHA, diffs.MEDIUM)
        settings = Settings(app_id=live.APP_ID, private_key=app_key[0], github_api_url=emulator.base_url)
        factory = PyGithubFactory(settings, retry=retry_policy(total=2, backoff=0.05, secondary_wait=1))
        self.github = factory.for_installation(1)

    def plant_comment(self, author: str, body: str) -> None:
        self.emulator.add_comment(REPO, NUMBER, body, author)

    def comments(self) -> list[tuple[str, str]]:
        return [(c["user"]["login"], c["body"]) for c in self.emulator.comments_on(REPO, NUMBER)]

    def checks(self, sha: str) -> list[tuple[str, str, str]]:
        return [(r["name"], r["conclusion"], r["output"]["title"]) for r in self.emulator.checks_for(REPO, sha)]

    def set_labels(self, names: list[str]) -> None:
        self.emulator.labels[(REPO, NUMBER)] = list(names)

    def labels(self) -> set[str]:
        return set(self.emulator.labels.get((REPO, NUMBER), []))

    def grant(self, login: str, permission: str) -> None:
        self.emulator.permissions[(REPO, login)] = permission


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


def test_a_check_is_one_per_head_and_name_and_is_updated_in_place(side):
    side.github.publish_check(REPO, CheckResult("perfbot / risk", SHA, "neutral", "high", "first"))
    side.github.publish_check(REPO, CheckResult("perfbot / risk", SHA, "success", "none", "second"))
    side.github.publish_check(REPO, CheckResult("perfbot / risk", OTHER_SHA, "neutral", "medium", "x"))
    assert side.checks(SHA) == [("perfbot / risk", "success", "none")]
    assert side.checks(OTHER_SHA) == [("perfbot / risk", "neutral", "medium")]


def test_only_labels_that_start_with_the_prefix_are_changed(side):
    side.set_labels(["bug", "perf-risk: low", "perf-riskless"])
    side.github.sync_labels(REPO, NUMBER, PREFIX, "perf-risk: high")
    assert side.labels() == {"bug", "perf-riskless", "perf-risk: high"}
    side.github.sync_labels(REPO, NUMBER, PREFIX, None)
    assert side.labels() == {"bug", "perf-riskless"}


def test_the_head_diff_and_files_are_read_and_a_missing_file_is_none(side):
    assert side.github.pull_head_sha(REPO, NUMBER) == SHA
    assert side.github.pull_diff(REPO, NUMBER) == diffs.MEDIUM
    assert side.github.read_file(REPO, CONFIG_PATH, "main") == diffs.BASE_CONFIG
    assert side.github.read_file(REPO, "no/such/file.yml", "main") is None


@pytest.mark.parametrize(
    "call",
    [
        lambda github: github.pull_head_sha(REPO, MISSING),
        lambda github: github.pull_diff(REPO, MISSING),
        lambda github: github.upsert_comment(REPO, MISSING, MARKER, MARKER),
        lambda github: github.sync_labels(REPO, MISSING, PREFIX, "perf-risk: high"),
    ],
    ids=["head", "diff", "comment", "labels"],
)
def test_a_pull_request_that_does_not_exist_is_gone(side, call):
    with pytest.raises(PullRequestGone):
        call(side.github)


def test_a_collaborators_permission_and_none_for_strangers_and_unknown_repositories(side):
    side.grant("maintainer", "write")
    side.grant("owner", "admin")
    side.grant("reader", "read")
    assert [side.github.permission(REPO, who) for who in ("maintainer", "owner", "reader", "stranger")] == [
        "write", "admin", "read", "none"]
    assert side.github.permission("nobody/nothing", "maintainer") == "none"
