"""Every failure is one of three kinds, and the wait before a retry honours the other side."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.service import failures
from bot.service.events import MalformedPayload
from bot.service.failures import Kind
from bot.service.ports.github import ArtifactInvalid, ArtifactUnavailable, DispatchRefused, PullRequestGone


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (failures.NoCredentials("no GitHub credentials"), Kind.PERMANENT),
        (failures.BadCredentials("401 Bad credentials"), Kind.PERMANENT),
        (failures.Gone("404"), Kind.PERMANENT),
        (MalformedPayload("pull_request.number: Field required"), Kind.PERMANENT),
        (PullRequestGone("gone"), Kind.PERMANENT),
        (failures.InstallationGone("App mode needs the installation of the event"), Kind.PERMANENT),
        (DispatchRefused(422, "no such input"), Kind.PERMANENT),
        (ArtifactInvalid("the artifact is 12 bytes; at most 5 are read"), Kind.PERMANENT),
        (failures.Transient("GitHub answered 502"), Kind.TRANSIENT),
        (failures.StorageUnavailable("database is locked"), Kind.TRANSIENT),
        (failures.QueueUnavailable("Redis is restarting"), Kind.TRANSIENT),
        # A KeyError is a bug, not a malformed payload: the payload was validated when it was parsed.
        (KeyError("number"), Kind.BUG),
        (TypeError("'NoneType' object is not subscriptable"), Kind.BUG),
        (RuntimeError("anything else"), Kind.BUG),
        # Tried again with its traceback logged once, as before it had a name.
        (ArtifactUnavailable("the artifact's storage answered 503"), Kind.BUG),
    ],
)
def test_each_failure_has_one_kind(error, kind):
    assert failures.classify(error) is kind


def test_the_backoff_doubles_from_ten_seconds_up_to_fifteen_minutes():
    assert [failures.backoff(n) for n in range(1, 9)] == [10, 20, 40, 80, 160, 320, 640, 900]


def test_the_backoff_waits_at_least_what_the_other_side_asked():
    assert failures.backoff(1, retry_after=61) == 61
    assert failures.backoff(3, retry_after=5) == 40
    assert failures.backoff(1, retry_after=7200) == failures.MAX_RETRY_S


@given(st.integers(min_value=1, max_value=10_000), st.none() | st.floats(min_value=0, max_value=1e9))
def test_the_backoff_is_always_between_the_first_wait_and_the_cap(attempt, retry_after):
    wait = failures.backoff(attempt, retry_after)
    assert failures.FIRST_RETRY_S <= wait <= failures.MAX_RETRY_S


def test_a_permanent_failure_says_what_to_do_without_naming_a_repository():
    assert "PERFBOT_GITHUB_TOKEN" in failures.hint(failures.NoCredentials("x"))
    assert failures.hint_for("NoCredentials") == failures.NoCredentials.hint
    assert failures.hint_for("BadCredentials") == failures.BadCredentials.hint
    assert failures.hint_for("KeyError") is None


def test_each_kind_of_gone_says_so_and_the_port_failures_keep_their_hints():
    assert (
        failures.hint(PullRequestGone("x"))
        == failures.hint(failures.InstallationGone("x"))
        == failures.Gone.hint
    )
    assert (
        failures.hint(DispatchRefused(404, "Not Found")) == "GitHub refused to start the benchmark workflow"
    )
    assert failures.hint_for("InstallationGone") == failures.hint_for("Gone") == failures.Gone.hint


def test_a_failure_is_described_on_one_line():
    assert failures.describe(KeyError("number")) == "KeyError: 'number'"
    assert failures.describe(RuntimeError("two\nlines  here")) == "RuntimeError: two lines here"
    assert failures.describe(RuntimeError()) == "RuntimeError"
