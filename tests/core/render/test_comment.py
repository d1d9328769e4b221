"""The sticky risk-review comment: golden Markdown per scenario, GitHub anchors, size bound."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.config.lenient import problem_line
from bot.core.config.schema import CONFIG_PATH, ConfigError
from bot.core.render import comment as render_comment
from bot.core.render.comment import MARKER, PullContext, diff_anchor, review_markdown, with_marker
from bot.core.risk.scoring import FileRisk, RiskReport, Signal

PULL = PullContext("https://github.com/octo/engine/pull/7", "0123456789abcdef" * 2 + "01234567", "main")


def comment_body(report, pull: PullContext) -> str:
    """The sticky comment of a review alone: the marker, then the review."""
    return with_marker(review_markdown(report, pull))


def signal(rule, weight, path, line, side="new", function="step", match=None, count=1, category=None):
    return Signal(
        rule,
        "path" if match is None else "token",
        category or rule.split(".")[0],
        weight,
        f"{rule.split('.')[-1].replace('-', ' ')} changed",
        path,
        function,
        line,
        side,
        match,
        count,
    )


def file_risk(path, score, signals, added=3, removed=1, cold=None):
    return FileRisk(path, None, "modified", False, added, removed, score, cold, signals)


def scenario(name: str) -> RiskReport:
    """Hand-built reports, so the goldens test the renderer alone, not the profiles' weights."""
    comm = "python/engine/distributed/pynccl.py"
    graphs = "python/engine/model_executor/cuda_graph_runner.py"
    if name == "none":
        return RiskReport(0, "none", "generic", [file_risk("docs/index.md", 0, [], cold="cold.docs")], [])
    hot = [
        signal("path.pynccl", 40, comm, 123, function="all_reduce"),
        signal(
            "token.host-sync", 15, comm, 124, match="torch.cuda.synchronize(", count=2, function="all_reduce"
        ),
        signal("path.cuda-graph", 35, graphs, 41, side="old", function="capture"),
    ]
    files = [
        file_risk(graphs, 35, hot[2:]),
        file_risk(comm, 49, hot[:2]),
        file_risk("tests/test_engine.py", 0, [], cold="cold.tests"),
    ]
    notes = []
    if name == "edits_config":
        notes = [
            f"this change edits {CONFIG_PATH}; config changes take effect after merge and do not affect this score"
        ]
    level = {"high": "high", "medium": "medium", "edits_config": "medium"}[name]
    return RiskReport(
        74 if level == "high" else 45,
        level,
        "sglang",
        files,
        sorted(hot, key=lambda s: -s.weight),
        notes=notes,
    )


@pytest.mark.parametrize("name", ["high", "medium", "none", "edits_config"])
def test_comment_golden(name, file_regression):
    file_regression.check(comment_body(scenario(name), PULL), basename=f"comment_{name}", extension=".md")


def test_comment_golden_with_a_broken_config(file_regression):
    line = problem_line(
        ConfigError(".github/perfbot.yml@main", ["risk.profil: unknown key (did you mean 'profile'?)"])
    )
    pull = PullContext(PULL.html_url, PULL.head_sha, "main", line)
    file_regression.check(
        comment_body(scenario("medium"), pull), basename="comment_config_error", extension=".md"
    )


def test_many_reasons_and_files_are_cut_with_a_count(file_regression):
    signals = [
        signal(f"path.rule-{i:02d}", 50 - i, f"python/engine/layer_{i:02d}.py", i + 1) for i in range(30)
    ]
    files = [file_risk(s.path, 50 - i, [s]) for i, s in enumerate(signals)]
    report = RiskReport(99, "high", "sglang", files, signals)
    file_regression.check(comment_body(report, PULL), basename="comment_many", extension=".md")


def test_the_marker_opens_the_comment():
    assert comment_body(scenario("none"), PULL).startswith(MARKER + "\n")


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


def test_removals_render_as_removed_and_as_possible_improvements_apart_from_the_score(file_regression):
    from tests.core.render.test_risk import REMOVALS, report

    file_regression.check(comment_body(report(REMOVALS), PULL), extension=".md")


def test_the_comment_and_the_reports_describe_a_signal_alike():
    """One function builds "description: `match` added (N times)" for every rendering."""
    added = Signal(
        "token.host-sync",
        "token",
        "host-sync",
        15,
        "a host sync",
        "e/pynccl.py",
        "f",
        3,
        "new",
        "x.item()",
        2,
    )
    removed = Signal(
        "token.host-sync", "token", "host-sync", 15, "a host sync", "e/pynccl.py", "f", 3, "old", "x.item()"
    )
    report = RiskReport(
        15,
        "low",
        "generic",
        [FileRisk("e/pynccl.py", None, "modified", False, 1, 1, 15, None, [added])],
        [added],
        improvements=[removed],
        improvement=15,
    )
    body = comment_body(report, PULL)
    assert "a host sync: `x.item()` added (2 times) —" in body
    assert "a host sync: `x.item()` removed —" in body and "`token.host-sync`, 15, not in the score" in body
    assert added.what() == "a host sync: `x.item()` added (2 times)"
    assert removed.what() == "a host sync: `x.item()` removed"


def test_a_lowered_weight_says_why_and_names_the_other_rules_and_versions():
    lowered = Signal(
        "path.pynccl",
        "path",
        "communicator",
        20,
        "NCCL communicator wrapper",
        "e/pynccl.py",
        "__init__",
        5,
        note="only set-up code changed: __init__()",
        full_weight=40,
        also=("path.communicators",),
    )
    upgrade = Signal(
        "dependency.runtime",
        "dependency",
        "dependency",
        60,
        "runtime stack",
        "pyproject.toml",
        None,
        9,
        match="torch 2.8.0 -> 2.9.1",
    )
    files = [
        FileRisk("e/pynccl.py", None, "modified", False, 1, 1, 20, None, [lowered]),
        FileRisk("pyproject.toml", None, "modified", False, 1, 1, 60, None, [upgrade]),
    ]
    body = comment_body(RiskReport(68, "high", "generic", files, [upgrade, lowered]), PULL)
    assert "runtime stack: `torch 2.8.0 -> 2.9.1` —" in body
    assert (
        "(`path.pynccl`, +20 of 40: only set-up code changed: \\_\\_init\\_\\_\\(\\); "
        "also path.communicators)"
    ) in body


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


def test_hostile_text_cannot_notify_link_or_hide(file_regression):
    """Paths, descriptions, notes and config errors come from the PR and its repository."""
    path = "python/@octocat/\u202eyp.evil\u202c/www.evil.example/k\u200bernel.py"
    hot = Signal(
        "path.x",
        "path",
        "p",
        50,
        "see https://evil.example/x and ping @org/team",
        path,
        "f\u2066n",
        3,
        "new",
        "&#64;admin `x`",
    )
    report = RiskReport(
        50,
        "medium",
        "generic",
        [FileRisk(path, None, "modified", False, 1, 0, 50, None, [hot])],
        [hot],
        notes=["mail admin@example.com &#x202E;"],
    )
    pull = PullContext(PULL.html_url, PULL.head_sha, "main", "bad key @everyone at https://x.example")
    body = comment_body(report, pull)
    file_regression.check(body, basename="comment_hostile", extension=".md")
    assert not re.search("[\u202a-\u202e\u2066-\u2069\u200b-\u200f]", body)
    outside_code = re.sub(r"`[^`]*`", " ", body.replace("\\`", ""))
    assert not re.search(r"(?<![\w\\])@\w", outside_code) and "https://evil" not in outside_code
