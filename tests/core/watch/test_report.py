"""The culprit's comment and issue, as golden files: the interval shown as a change, and every name
that did not come from perfbot (suite, metric, subject) inert in a code span, also in the title."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from markdown_it import MarkdownIt

from bot.core.watch import report

CULPRIT = report.Culprit(
    key="watch:o/r:decode:step_ms:abc",
    suite="decode",
    metric="step_ms",
    good="a" * 40,
    bad="b" * 40,
    source="merge",
    culprit="c" * 40,
    subject="Fuse the rotary kernel",
    change="+8.4%",
    ci=(1.075, 1.094),  # the ratio culprit / parent, as BisectOutcome.ci holds it
    commits=12,
    runs=6,
    run_url="https://github.com/o/r/actions/runs/7",
    found_by_url="https://github.com/o/r/actions/runs/5",
    kernels_markdown=None,
)
HOSTILE = replace(
    CULPRIT,
    suite="decode",
    metric="a:https://evil.example/z",
    subject="[click](https://evil.example/x) @maintainers <img src=x> `code` | pipe www.evil.example",
)


def test_the_comment(file_regression):
    file_regression.check(report.culprit_comment(CULPRIT), extension=".md")


def test_the_issue_body(file_regression):
    file_regression.check(
        report.issue_body(CULPRIT, "https://github.com/o/r/pull/3#issuecomment-9"), extension=".md"
    )


def test_the_comment_of_hostile_names(file_regression):
    file_regression.check(report.culprit_comment(HOSTILE), extension=".md")


def test_the_interval_is_the_change_not_the_ratio():
    comment = report.culprit_comment(CULPRIT)
    assert "+8.4%** (95% interval of the change +7.5% to +9.4%)" in comment
    assert "107.5%" not in comment


def test_one_commit_and_one_run_are_counted_in_the_singular_and_no_gpu_is_claimed():
    # A one-commit range bisected by its reference run alone (the sandbox's CPU runner does this
    # too): "1 commits bisected in 1 benchmark runs" on "the GPU runners" before.
    comment = report.culprit_comment(replace(CULPRIT, commits=1, runs=1))
    assert "1 commit bisected in 1 benchmark run." in comment
    assert "GPU" not in comment


def _inline(markdown: str) -> list:
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [child for token in tokens if token.children for child in token.children]


@pytest.mark.parametrize("render", [report.culprit_comment, lambda c: report.issue_body(c, None)])
def test_no_name_from_outside_becomes_a_link_a_mention_or_html(render):
    markdown = render(HOSTILE)
    inline = _inline(markdown)
    links = [t.attrGet("href") for t in inline if t.type == "link_open"]
    assert all(not str(href).startswith("https://evil") for href in links), links
    assert not [t for t in inline if t.type == "html_inline" and "img" in t.content]
    spans = [t.content for t in inline if t.type == "code_inline"]
    assert "a:https://evil.example/z" in spans
    assert any("[click](https://evil.example/x) @maintainers" in s for s in spans)
    # Outside code spans, nothing is left for GitHub to autolink or notify.
    prose = " ".join(t.content for t in inline if t.type == "text")
    assert not re.search(r"@\w|evil", prose), prose


def test_the_title_shows_every_name_in_a_code_span():
    title = report.issue_title("decode", "a:https://evil.example/z", "c" * 40)
    assert title == "perfbot: regression of `decode` `a:https://evil.example/z` bisected to `cccccccccccc`"
    assert (
        report.issue_title("decode", "", "c" * 40)
        == "perfbot: regression of `decode` bisected to `cccccccccccc`"
    )
    assert report.issue_title("d`x", "m", "c" * 40).startswith("perfbot: regression of `d'x` `m`")
