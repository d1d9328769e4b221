"""Clipping and printable text: bounded lengths, nothing a reader cannot see."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.text import ELLIPSIS, clip, printable

UNSEEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


@given(st.text(), st.integers(0, 50), st.sampled_from(["start", "ends"]))
def test_a_clipped_text_never_exceeds_its_limit(text, limit, keep):
    clipped = clip(text, limit, keep=keep)
    assert len(clipped) <= max(limit, 1)
    if len(text) <= limit:
        assert clipped == text
    else:
        assert ELLIPSIS in clipped


def test_the_start_or_both_ends_are_kept():
    assert clip("abcdefghij", 5) == "abcd…"
    assert clip("abcdefghij", 8, keep="ends") == "abc…hij"
    assert clip("dir/sub/file.py", 15, keep="ends") == "dir/sub/file.py"


def test_every_unseen_character_of_this_pythons_unicode_is_replaced():
    unseen = "".join(
        chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in UNSEEN_CATEGORIES
    )
    assert printable(unseen, replacement="") == ""
    assert printable(unseen) == "?" * len(unseen)


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200b", "\u200d", "\u2060", "\ufeff", "\x1b", "\n"])
def test_bidi_zero_width_and_control_characters_are_made_visible(char):
    assert printable(f"a{char}b") == "a?b"


@given(st.text())
def test_printable_text_keeps_every_visible_character(text):
    shown = printable(text)
    assert len(shown) == len(text)
    assert all(s == t or s == "?" for s, t in zip(shown, text, strict=True))
    assert not any(unicodedata.category(c) in UNSEEN_CATEGORIES for c in shown)
