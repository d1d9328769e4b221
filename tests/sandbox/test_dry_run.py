"""What `perfbot deliver --dry-run` puts on the stand-in comes from a payload the user wrote: any
JSON object is either held (a repository, maybe a pull request and a comment) or refused with
one line, never a traceback."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.sandbox import dry_run, payloads, sample
from bot.sandbox.github import GitHubEmulator

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
# Where a payload's fields that the stand-in reads live: each may hold anything.
PATHS = [
    ("repository",),
    ("repository", "full_name"),
    ("repository", "default_branch"),
    ("pull_request",),
    ("pull_request", "number"),
    ("pull_request", "base"),
    ("pull_request", "base", "sha"),
    ("pull_request", "head"),
    ("pull_request", "head", "sha"),
    ("pull_request", "user"),
    ("pull_request", "user", "login"),
    ("pull_request", "state"),
    ("pull_request", "merge_commit_sha"),
    ("issue",),
    ("issue", "number"),
    ("issue", "user"),
    ("comment",),
    ("comment", "id"),
    ("comment", "user"),
    ("comment", "user", "login"),
    ("comment", "body"),
    ("review",),
    ("review", "user"),
    ("sender",),
    ("sender", "login"),
]
EXAMPLES = [
    payloads.pull_request("opened", number=2, repo="acme/engine", installation_id=1),
    payloads.issue_comment(
        "/bench", number=2, repo="acme/engine", installation_id=1, login="m", comment_id=9
    ),
    payloads.pull_request_review(
        "/bench", number=2, repo="acme/engine", installation_id=1, login="m", review_id=4
    ),
]


def changed(payload: dict, changes: list) -> dict:
    payload = copy.deepcopy(payload)
    for path, value in changes:
        holder = payload
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict):
            holder[path[-1]] = value
    return payload


@settings(max_examples=400, deadline=None)
@given(
    payload=st.builds(
        changed,
        st.sampled_from(EXAMPLES),
        st.lists(st.tuples(st.sampled_from(PATHS), JSON), min_size=1, max_size=4),
    )
    | st.dictionaries(st.text(max_size=10), JSON, max_size=4)
)
def test_any_payload_is_held_or_refused_in_one_line(payload):
    try:
        dry_run.hold(GitHubEmulator(), payload, "", None)
    except dry_run.NotAPullRequest as refused:
        assert "\n" not in str(refused)


def test_a_comment_on_a_pull_request_is_held_with_its_author_allowed_to_write():
    standin = GitHubEmulator()
    payload = payloads.issue_comment(
        "/bench", number=5, repo="acme/engine", installation_id=1, login="maint", comment_id=77
    )
    dry_run.hold(standin, payload, sample.slow_diff(), "version: 1\n")
    state = standin.repos["acme/engine"]
    assert state.pulls[5].head_sha == sample.SLOW_SHA and state.pulls[5].base_sha == sample.BEFORE_SLOW_SHA
    assert standin.comments[77]["body"] == "/bench" and state.permissions["maint"] == "write"
    assert state.files[(payload["repository"]["default_branch"], ".github/perfbot.yml")] == "version: 1\n"
