"""The built-in globs' translations that ship with perfbot are pathspec's, and cover every built-in glob."""

from __future__ import annotations

import pytest
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from bot.core.config import patterns
from bot.core.config.glob_table import TRANSLATED
from tests.support import glob_table

REGENERATE = "stale: run `.venv/bin/python -m tests.support.glob_table`"


def test_every_builtin_glob_is_translated_ahead():
    assert set(glob_table.builtin_globs()) - set(TRANSLATED) == set(), REGENERATE


@pytest.mark.parametrize("glob", sorted(TRANSLATED))
def test_each_translation_is_pathspecs(glob):
    source, include = GitIgnoreSpecPattern.pattern_to_regex(glob)
    assert TRANSLATED[glob] == (source, bool(include)), REGENERATE


def test_the_table_is_what_the_generator_writes():
    assert glob_table.render().splitlines()[:12] == glob_table.TABLE.read_text().splitlines()[:12]
    assert len(TRANSLATED) == len(glob_table.builtin_globs())


def test_a_glob_not_in_the_table_is_translated_by_pathspec_alike():
    # A repository's own glob takes pathspec's path; it must compile to what the table would give.
    glob = "**/my_kernels/**"
    assert glob not in TRANSLATED
    assert patterns.glob_regex([glob]).pattern == patterns.glob_regex(["**/csrc/**"]).pattern.replace(
        "csrc", "my_kernels"
    )
    with pytest.raises(patterns.PatternError, match="not a valid glob"):
        patterns.glob_regex(["bad\\"])
