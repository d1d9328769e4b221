"""The one table of the GitHub events the bot acts on: `events.parse` reads it, and so does the
router (what the App subscribes to); each event's actions are the Literal its typed event carries."""

from __future__ import annotations

from typing import get_args, get_type_hints

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.service import events
from bot.service.routes import ROUTER
from tests.support import github_data


def test_the_router_subscribes_to_the_events_the_table_parses():
    assert ROUTER.events() == set(events.KINDS)


@pytest.mark.parametrize("name", sorted(events.KINDS))
def test_each_event_s_actions_are_the_literal_of_its_typed_event(name):
    kind = events.KINDS[name]
    action = get_type_hints(kind.type).get("action")
    if action is not None:  # a command has no action: its event's one action made it a command
        assert get_args(action) == kind.actions


@pytest.mark.parametrize("action", get_args(events.PullRequestAction))
def test_every_pull_request_action_acted_on_parses_into_its_event(action):
    parsed = events.parse("pull_request", github_data.pull_request(action, number=7))
    assert isinstance(parsed, events.PullRequestEvent) and parsed.action == action


@given(
    st.sampled_from(sorted(events.KINDS)),
    st.one_of(
        st.text(max_size=30),
        st.none(),
        st.integers(),
        st.lists(st.text(max_size=3), max_size=2),
        st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
    ),
)
def test_an_action_the_table_does_not_list_is_not_parsed_and_never_raises(name, action):
    if action in events.KINDS[name].actions:
        return
    assert events.parse(name, {"action": action}) is None
