"""Comments on the sandbox's pages: GitHub's Markdown (tables, details), and nothing a comment
writes can script the page."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.sandbox.markdown import ALLOWED_TAGS, render

# What markdown-it itself writes with attributes: links, images, aligned table cells, ordered lists' start.
GENERATED = {
    "a": {"href"},
    "img": {"src", "alt"},
    "th": {"style"},
    "td": {"style"},
    "ol": {"start"},
    "code": {"class"},
}
TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)((?:\s[^<>]*)?)/?>")
ATTRIBUTE = re.compile(r'\s([a-zA-Z-]+)="([^"]*)"')


def assert_safe(page: str) -> None:
    for _closing, name, attributes in TAG.findall(page):
        assert name in ALLOWED_TAGS | set(GENERATED), name
        found = dict(ATTRIBUTE.findall(attributes))
        assert set(found) <= GENERATED.get(name, set()), (name, attributes)
        for value in found.values():
            assert not value.lower().lstrip().startswith(("javascript:", "vbscript:", "data:text")), value
            assert "expression(" not in value.lower()


def test_the_bots_comment_renders_as_on_github():
    page = render(
        "<!-- perfbot:risk-review -->\n### 🔴 Performance risk: **high** (81/100)\n\n"
        "| score | file |\n|---:|---|\n| 66 | [pynccl.py](https://x/pull/1/files#diff-ab) |\n\n"
        "<details><summary>Kernels</summary>\n\n| a |\n|---|\n| `aten::zeros` |\n\n</details>\n\n"
        "<sub>perfbot · head `3e4bb76d9da0`</sub>\n"
    )
    assert "perfbot:risk-review" not in page
    assert "<h3>🔴 Performance risk: <strong>high</strong> (81/100)</h3>" in page
    assert (
        '<th style="text-align:right">score</th>' in page
        and '<a href="https://x/pull/1/files#diff-ab">' in page
    )
    assert "<details><summary>Kernels</summary>" in page and "<code>aten::zeros</code>" in page
    assert "<sub>perfbot · head <code>3e4bb76d9da0</code></sub>" in page


def test_markup_that_could_script_the_page_is_shown_as_text():
    page = render(
        '<script>alert(1)</script>\n\n<img src=x onerror="alert(1)"> <a href="javascript:x">y</a> '
        "[z](javascript:alert(1)) <details open ontoggle=alert(1)>"
    )
    assert_safe(page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<img" not in page and "<details" not in page


# Comments made of the pieces of markup and Markdown, and of anything at all.
PIECES = st.lists(
    st.sampled_from(
        [
            "<",
            ">",
            "/",
            "=",
            '"',
            "'",
            " ",
            "\n",
            "!--",
            "-->",
            "`",
            "*",
            "[",
            "]",
            "(",
            ")",
            ":",
            "&",
            ";",
            "#",
            "|",
            "script",
            "img",
            "a",
            "details",
            "summary",
            "href",
            "src",
            "javascript",
            "onerror",
            "x",
            "\n\n",
            "|---|",
        ]
    )
).map("".join)


@settings(max_examples=300, deadline=None)
@given(PIECES | st.text())
def test_no_comment_renders_a_tag_or_attribute_beyond_the_allowed(text):
    assert_safe(render(text))
