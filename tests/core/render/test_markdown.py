"""Escaping untrusted text for Markdown: whatever the input, the output is inert prose on one line
that reads exactly as the input (minus what a reader could not see), and `fit` keeps a size."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.render.markdown import code, code_block, escape_html_text, escape_md, fit
from bot.core.text import printable

UNSEEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}
# Characters that start Markdown syntax, HTML, an entity or a table cell when left unescaped.
ACTIVE = set("\\`*_{}[]<>()#+!|~&")
MENTION = re.compile(r"(?<![A-Za-z0-9_])@[A-Za-z0-9]")
LINK = re.compile(r"(?i)(?:https?|ftp)://|www\.|[A-Za-z0-9.+_-]@[A-Za-z0-9_-]+\.[A-Za-z0-9_-]")

# Text made of what hostile input is made of: syntax, mentions, links, hidden characters.
pieces = st.sampled_from(
    [
        "@",
        "@octocat",
        "@org/team",
        "http://",
        "https://evil.example/x",
        "www.",
        "user@example.com",
        "<script>",
        "&#64;",
        "&#x202E;",
        "\u202e",
        "\u2066",
        "\u200b",
        "\u200d",
        "\ufeff",
        "\x1b",
        "\n",
        "\r",
        "\t",
        "|",
        "`",
        "\\",
        "[x](y)",
        "![i](u)",
        "**",
        "_",
        "# ",
        "~",
        "a",
        "b",
        " ",
        ".",
        ")",
    ]
)
hostile = st.lists(pieces | st.text(max_size=5), max_size=30).map("".join)


def parse(markdown: str) -> tuple[str, list[str], str]:
    """Read escaped prose the way CommonMark does for what `escape_md` emits: a backslash makes the
    next character literal, backticks delimit code spans. Returns the text a reader sees, the code
    spans' contents, and the prose characters that were left unescaped."""
    seen, spans, unescaped, i = [], [], [], 0
    while i < len(markdown):
        char = markdown[i]
        if char == "\\":
            seen.append(markdown[i + 1])
            i += 2
        elif char == "`":
            end = markdown.index("`", i + 1)
            spans.append(markdown[i + 1 : end])
            seen.append(markdown[i + 1 : end])
            i = end + 1
        else:
            seen.append(char)
            unescaped.append(char)
            i += 1
    return "".join(seen), spans, "".join(unescaped)


def visible(text: str) -> str:
    text = re.sub(r"[\t\n\v\f\r\u2028\u2029]", " ", text)
    return "".join(c for c in text if unicodedata.category(c) not in UNSEEN_CATEGORIES)


@settings(max_examples=400, deadline=None)
@given(hostile)
def test_escaped_text_reads_as_the_visible_input_and_nothing_in_it_is_active(text):
    escaped = escape_md(text)
    seen, spans, unescaped = parse(escaped)
    assert seen == visible(text)
    assert not ACTIVE & set(unescaped), "every syntax character outside a code span is escaped"
    assert not any(unicodedata.category(c) in UNSEEN_CATEGORIES for c in escaped)
    assert all("|" not in s and "`" not in s and s.strip() == s and s for s in spans)
    # Outside code spans (which GitHub never links and never reads mentions in) nothing could link
    # or notify; a span ends a text node, so it stands in as a boundary.
    prose = _outside_spans(escaped)
    assert MENTION.search(prose) is None
    assert LINK.search(prose) is None


def _outside_spans(escaped: str) -> str:
    """The text a reader sees outside code spans, each span replaced by a space."""
    out, i = [], 0
    while i < len(escaped):
        if escaped[i] == "\\":
            out.append(escaped[i + 1])
            i += 2
        elif escaped[i] == "`":
            i = escaped.index("`", i + 1) + 1
            out.append(" ")
        else:
            out.append(escaped[i])
            i += 1
    return "".join(out)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("thanks @octocat", "thanks `@octocat`"),
        ("cc @org/perf-team.", "cc `@org/perf-team`."),
        ("see https://evil.example/x).", "see `https://evil.example/x`\\)."),
        ("www.evil.example", "`www.evil.example`"),
        ("mail bob@example.com", "mail `bob@example.com`"),
        ("perfbot.yml@main: risk", "perfbot.yml@main: risk"),
        ("user@host", "user@host"),
        ("@a@b and x@c", "`@a@b` and x@c"),
        ("a\u202eb\u200bc\ufeff", "abc"),
        ("&#x202E;&#64;u", "\\&\\#x202E;\\&\\#64;u"),
        ("<img src=x>", "\\<img src=x\\>"),
        ("row | breaker\nnext", "row \\| breaker next"),
    ],
)
def test_hostile_pieces_become_inert(text, expected):
    assert escape_md(text) == expected


@given(hostile)
def test_code_span_content_cannot_end_the_span_or_the_row(text):
    inside = code(text)
    assert "`" not in inside
    assert not any(unicodedata.category(c) in UNSEEN_CATEGORIES for c in inside)
    assert re.search(r"(?<!\\)\|", inside) is None


def test_fit_leaves_out_whole_blocks_and_says_so():
    fitted = fit(["a" * 100, "", "b" * 100, "c" * 50], limit=400)
    assert (
        fitted == "a" * 100 + "\n\n" + "c" * 50 + "\n\n*1 section(s) left out to stay under GitHub's "
        "comment size limit.*\n"
    )
    assert fit(["x", "", "y"], limit=1000) == "x\n\ny\n"


@given(hostile)
def test_no_line_can_close_a_code_block_early(text):
    block = code_block(text, "sh")
    fence = block[: block.index("sh\n")]
    inner = block.split("\n")[1:-1]
    assert inner == [printable(line, replacement="") for line in text.splitlines()]
    assert block.endswith("\n" + fence) and len(fence) >= 3
    assert not any(re.fullmatch(f" {{0,3}}`{{{len(fence)},}} *", line) for line in inner)
    assert not any(unicodedata.category(c) in UNSEEN_CATEGORIES for c in "".join(inner))


@settings(max_examples=400, deadline=None)
@given(hostile)
def test_text_in_raw_html_reads_as_the_visible_input_with_no_backslash_and_nothing_active(text):
    """Inside a ``<summary>`` GitHub renders no Markdown: a backslash escape would show. The text
    parsed as HTML reads as the visible input; it opens no element but the code spans that hold
    what would link or notify, and no entity but the escapes of <, > and &."""
    from html.parser import HTMLParser

    escaped = escape_html_text(text)

    class Reader(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.seen, self.tags, self.in_code, self.prose = [], [], False, []

        def handle_starttag(self, tag, attrs):
            self.tags.append((tag, attrs))
            self.in_code = True

        def handle_endtag(self, tag):
            self.in_code = False

        def handle_data(self, data):
            self.seen.append(data)
            if not self.in_code:
                self.prose.append(data)

    reader = Reader()
    reader.feed(escaped)
    reader.close()
    assert all(tag == ("code", []) for tag in reader.tags)
    assert "".join(reader.seen) == printable(visible(text))
    prose = "".join(reader.prose)
    assert not MENTION.search(prose) and not LINK.search(prose)
    assert "\n" not in escaped
    assert re.fullmatch(r"(?:[^&]|&(?:lt|gt|amp);)*", escaped)
