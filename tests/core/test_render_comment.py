"""The sticky risk-review comment: golden Markdown per scenario, GitHub anchors, size bound."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core import diff, render_comment, risk, ruleset
from bot.core.config import RepoConfig
from bot.core.render_comment import MARKER, PullContext, comment_body, diff_anchor
from bot.core.risk import FileRisk, RiskReport, Signal
from tests.service import diffs

PULL = PullContext("https://github.com/octo/engine/pull/7", "0123456789abcdef" * 2 + "01234567", "main")


def report_for(text: str) -> RiskReport:
    parsed = diff.parse(text)
    return risk.score(parsed, ruleset.build(RepoConfig(), (f.path for f in parsed.files)))


@pytest.mark.parametrize(
    "scenario,text",
    [
        ("high", diffs.HIGH),
        ("medium", diffs.MEDIUM),
        ("none", diffs.COLD),
        ("edits_config", diffs.EDITS_CONFIG),
    ],
)
def test_comment_golden(scenario, text, file_regression):
    file_regression.check(
        comment_body(report_for(text), PULL), basename=f"comment_{scenario}", extension=".md"
    )


def test_comment_golden_with_a_broken_config(file_regression):
    pull = PullContext(PULL.html_url, PULL.head_sha, "main", ".github/perfbot.yml@main: risk: unknown key")
    file_regression.check(
        comment_body(report_for(diffs.MEDIUM), pull), basename="comment_config_error", extension=".md"
    )


def test_the_marker_opens_the_comment():
    assert comment_body(report_for(diffs.COLD), PULL).startswith(MARKER + "\n")


def test_anchors_follow_githubs_files_tab_scheme():
    digest = hashlib.sha256(b"a/b.py").hexdigest()
    assert diff_anchor("a/b.py", 12) == f"diff-{digest}R12"
    assert diff_anchor("a/b.py", 12, "old") == f"diff-{digest}L12"
    assert diff_anchor("a/b.py", None) == f"diff-{digest}"


def test_a_removed_line_links_to_the_old_side():
    signal = Signal("token.x", "token", "sync", 10, "sync", "a.py", "f", 5, "old", "torch.cuda.synchronize(")
    report = RiskReport(
        10, "low", "generic", [FileRisk("a.py", None, "modified", False, 0, 1, 10, None, [signal])], [signal]
    )
    assert f"#{diff_anchor('a.py', 5, 'old')})" in comment_body(report, PULL)


def test_markdown_and_html_in_paths_are_escaped():
    path = "x/<img src=x onerror=alert(1)>/[link](http://evil).py"
    signal = Signal("path.x", "path", "p", 50, "hot <b>path</b>", path, None, 1)
    report = RiskReport(
        50, "medium", "generic", [FileRisk(path, None, "modified", False, 1, 0, 50, None, [signal])], [signal]
    )
    body = comment_body(report, PULL)
    assert not re.search(r"(?<!\\)<(img|b)", body), "raw HTML must be escaped"
    assert not re.search(r"(?<!\\)\]\(http://evil", body), "a link in a path must not become a link"


names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=5000)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(names, names, st.integers(0, 10**6)), min_size=0, max_size=300),
    st.lists(names, max_size=200),
)
def test_any_report_fits_in_a_github_comment(items, notes):
    signals = [
        Signal(f"r{i}", "path", f"c{i % 7}", 30, desc, path, path, line or None, "new", desc)
        for i, (path, desc, line) in enumerate(items)
    ]
    files = [FileRisk(s.path, None, "modified", False, 10**6, 10**6, 50, None, [s]) for s in signals]
    report = RiskReport(99, "high", "generic", files, signals, warnings=notes, notes=notes)
    pull = PullContext("https://github.com/o/r/pull/1", "f" * 40, "x" * 5000, "e" * 5000)
    assert len(comment_body(report, pull)) < render_comment.GITHUB_LIMIT
