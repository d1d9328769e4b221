"""`/bench dismiss CASE [REASON]`: which words make the command, and which do not."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from bot.core.commands import grammar


def test_a_case_key_or_its_start_with_a_reason():
    assert grammar.parse("/bench dismiss case-1a2b3c4d") == grammar.Dismiss("case-1a2b3c4d", "")
    assert grammar.parse("/bench dismiss CASE-1A2B3C4D5E noisy p99 on this runner") == grammar.Dismiss(
        "case-1a2b3c4d5e", "noisy p99 on this runner"
    )


def test_anything_but_a_case_key_is_refused_with_the_usage():
    for words in ("", "1a2b3c4d", "case-1a2b3c4", "case-zzzzzzzz", "case-" + "a" * 33):
        command = grammar.parse(f"/bench dismiss {words}".rstrip())
        assert isinstance(command, grammar.Invalid) and "/bench dismiss case-" in command.problem


@given(st.text(max_size=60))
def test_any_reason_is_one_line_without_control_characters(reason):
    command = grammar.parse(f"/bench dismiss case-12345678 {reason}")
    assert isinstance(command, grammar.Dismiss)
    assert not any(unicodedata.category(c) == "Cc" for c in command.reason)
