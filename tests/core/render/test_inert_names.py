"""Every name that did not come from perfbot stays inert in the Markdown its renderers write (the
review's rule table, the benchmark section, the bisect report): no link, mention or HTML of its own,
whatever a config's rule, a workflow run's address or a bisect's refs hold (issue 35)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from bot.core.bisect.report import BisectReport, Measurement
from bot.core.config.rules import Rule
from bot.core.render import bench as render_bench
from bot.core.render import bisect as render_bisect
from bot.core.render import risk as render_risk
from bot.core.render.markdown import link_target

HOSTILE = "[click](https://evil.example/x) @maintainers <img src=x> a:https://evil.example/z"
OURS_HTML = {"<details>", "</details>", "<summary>", "</summary>", "<sub>", "</sub>", "<br>"}


def inline(markdown: str) -> list:
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    return [child for token in tokens if token.children for child in token.children]


def assert_inert(markdown: str) -> None:
    tokens = inline(markdown)
    links = [t.attrGet("href") for t in tokens if t.type == "link_open"]
    assert not any("evil" in str(urlsplit(str(href)).hostname) for href in links), links
    html = [t.content for t in tokens if t.type == "html_inline" and t.content not in OURS_HTML]
    assert html == [], html
    # Outside code spans nothing is left for GitHub to autolink or to notify.
    prose = " ".join(t.content for t in tokens if t.type == "text")
    assert not re.search(r"@\w|evil", prose), prose


def test_a_rule_s_category_from_the_config_is_inert_in_the_rule_table():
    """A custom rule's category was printed as it is: a link and a mention in the table. Failed
    before."""
    rule = Rule(id="my-rule", kind="token", category=HOSTILE, weight=5, description=HOSTILE, pattern="x")
    assert_inert(render_risk.rules_markdown([rule]))


def bisect_report(good: str, bad: str) -> BisectReport:
    reference = Measurement(
        purpose="reference",
        base=good,
        head=bad,
        outcome=None,
        verdict="regression",
        ratio=1.1,
        ci=(1.05, 1.15),
        p_value=0.001,
        results_path="results.json",
        why="",
    )
    return BisectReport(
        good=good,
        bad=bad,
        suite="decode",
        metric=HOSTILE,
        commits=3,
        culprit=None,
        parent=None,
        measurements=(reference,),
        plain_probes=None,
        conclusion=HOSTILE,
    )


def test_the_bisect_report_s_refs_cannot_leave_their_code_span():
    """GOOD and BAD are refs as given (git allows a backtick in a ref name): one that closed the
    code span put a mention in the report. Failed before."""
    assert_inert(render_bisect.bisect_markdown(bisect_report("`@octocat`", "v1`@team`")))


def section(run_url: str) -> render_bench.BenchSection:
    return render_bench.BenchSection(
        status="running",
        base_sha="a" * 40,
        head_sha="b" * 40,
        suites=("decode",),
        trigger="command",
        requested_by="@someone",
        run_url=run_url,
    )


def test_the_workflow_run_s_address_cannot_add_a_link_of_its_own():
    """The run's address went into the link's target as it was: a ``)`` ended it and what followed
    was a link of its own. Failed before."""
    markdown = render_bench.section_markdown(
        section("https://github.com/o/r/actions/runs/1) [click](https://evil.example/x")
    )
    assert_inert(markdown)
    [link] = [t.attrGet("href") for t in inline(markdown) if t.type == "link_open"]
    assert link.startswith("https://github.com/o/r/actions/runs/1")


def test_a_run_address_that_is_no_web_address_is_not_linked():
    markdown = render_bench.section_markdown(section("javascript:alert(1)"))
    assert [t for t in inline(markdown) if t.type == "link_open"] == []


@given(url=st.one_of(st.text(), st.builds("https://{}".format, st.text())))
def test_a_link_target_is_an_http_address_that_nothing_can_end_early(url):
    target = link_target(url)
    if target is None:
        return
    assert target.lower().startswith(("http://", "https://"))
    assert not set(target) & set("()<>\"'` |\\") and target.isprintable()
    assert [t.type for t in inline(f"[x]({target}) after")] == ["link_open", "text", "link_close", "text"]
