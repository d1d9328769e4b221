"""Path globs: gitignore semantics, matched by RE2 in time linear in the path, with caps."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from bot.core.config import patterns
from bot.core.config import schema as config
from bot.core.config.schema import ConfigError
from bot.core.risk import diff as diffs
from bot.core.risk import ruleset
from bot.core.risk import scoring as risk

# Under Python's `re` each of these takes minutes or more against the names below (nested
# stars backtrack over every split of the name); under RE2 they take microseconds.
HOSTILE_GLOBS = [
    "*a*a*a*a*a*a*b",
    "**/*a*a*a*a*a*a*a*a*c",
    "a*a*a*a*a*a*a*a*a*a*/**",
    "*" * 40 + "z",
    "**/" * 30 + "q",
]
HOSTILE_NAMES = ["a" * 100, "x/" + "a" * 3000, "/".join(["a"] * 2000), "a" * 4000 + "y"]


def oracle(globs: list[str], path: str) -> bool:
    """pathspec's own matching (Python `re`): usable on short inputs only."""
    for glob in globs:
        pattern = GitIgnoreSpecPattern(glob)
        if pattern.include and pattern.match_file(path) is not None:
            return True
    return False


def test_hostile_globs_against_long_names_answer_correctly():
    for glob in HOSTILE_GLOBS:
        compiled = patterns.glob_regex([glob])
        for name in HOSTILE_NAMES:
            assert compiled.search(name) is None, (glob, name[:20])
    # The same shapes match when they should.
    assert patterns.glob_regex(["*a*a*a*a*a*a*b"]).search("a" * 100 + "b")
    assert patterns.glob_regex(["**/" * 30 + "q"]).search("x/y/q")
    assert patterns.glob_regex(["*" * 40 + "z"]).search("dir/" + "a" * 500 + "z")


def test_hostile_repository_rules_score_a_hostile_diff():
    yaml_text = "risk:\n  rules:\n" + "".join(
        f"    - {{id: hostile.r{i}, kind: path, category: c{i}, weight: 10, description: d, "
        f"paths: ['{glob}']}}\n"
        for i, glob in enumerate(HOSTILE_GLOBS)
    )
    text = "".join(
        f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-a\n+b\n"
        for name in HOSTILE_NAMES[:3]
    )
    parsed = diffs.parse(text)
    report = risk.score(parsed, ruleset.build(config.load(yaml_text), ()))
    assert not any(s.rule.startswith("hostile.") for s in report.signals)
    assert len(report.files) == 3


globs = st.lists(st.text(alphabet="ab/*?![]\\.", min_size=1, max_size=8), min_size=1, max_size=3)
paths = st.lists(st.text(alphabet="ab.[]", min_size=1, max_size=4), min_size=1, max_size=4).map("/".join)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # pathspec's `re` on globs like `[[]`
@given(globs, paths)
@settings(max_examples=500, deadline=None)
def test_globs_match_as_pathspec_does(globs, path):
    try:
        compiled = patterns.glob_regex(globs)
    except patterns.PatternError:
        with pytest.raises(ValueError):
            for glob in globs:
                GitIgnoreSpecPattern(glob)
        return
    assert bool(compiled.search(path)) == oracle(globs, path)


def test_an_invalid_glob_is_a_config_error_naming_the_key():
    with pytest.raises(ConfigError) as caught:
        config.load(
            "risk:\n  rules:\n    - {id: a.b, kind: path, category: c, weight: 1, "
            "description: d, paths: ['ok/**', 'bad\\']}\n"
        )
    assert caught.value.problems[0].startswith("risk.rules[0].paths: not a valid glob")


def test_a_glob_list_with_only_negations_matches_nothing():
    assert patterns.glob_regex(["!a", "!b/**"]).search("a") is None
    assert patterns.glob_regex([]).search("anything") is None


def test_paths_over_the_length_cap_match_no_glob_and_are_reported():
    long = "engine/" + "d/" * (patterns.MAX_PATH_LENGTH // 2) + "pynccl.py"
    text = f"diff --git a/{long} b/{long}\n--- a/{long}\n+++ b/{long}\n@@ -1 +1 @@\n-a\n+    x.item()\n"
    parsed = diffs.parse(text)
    report = risk.score(parsed, ruleset.build(config.RepoConfig(), ()))
    assert "path.pynccl" not in {s.rule for s in report.signals}
    assert "token.host-sync" in {s.rule for s in report.signals}  # its lines are still read
    assert any("longer than 4,096 characters" in w for w in report.warnings)


def test_files_over_the_count_cap_are_left_out_with_a_warning(monkeypatch):
    monkeypatch.setattr(risk, "MAX_FILES", 3)
    text = "".join(
        f"diff --git a/f{i}.py b/f{i}.py\n--- a/f{i}.py\n+++ b/f{i}.py\n@@ -1 +1 @@\n-a\n+b\n"
        for i in range(5)
    )
    report = risk.score(diffs.parse(text), ruleset.build(config.RepoConfig(), ()))
    assert [f.path for f in report.files] == ["f0.py", "f1.py", "f2.py"]
    assert "5 files changed: only the first 3 were scored" in report.warnings
