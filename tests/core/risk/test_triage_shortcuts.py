"""The shortcuts that keep `perfbot triage` fast must never change what it reads or judges.

Each shortcut is checked against the slower way it replaces, over generated input: the diff reader
that has unidiff read a file's header alone (against unidiff's reading of the whole section,
damaged sections included), the per-hunk lines of code (against `is_code_line` line by line), and
the count of punctuation that rules most hunks out before their names are compared (against
judging every hunk without it)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from bot.core.risk import changes
from bot.core.risk import diff as diffs
from tests.core.risk.test_changes import file_diff
from tests.core.risk.test_log_prefilter import LINES as LOG_LINES
from tests.core.risk.test_log_prefilter import judged

# --- the diff reader -----------------------------------------------------------------------------


def whole_section_reading(section: str) -> list[diffs.FileChange] | None:
    """The quick reader as it was: unidiff's metadata parse of the whole section, every time."""
    patch = PatchSet(section, metadata_only=True)
    if len(patch) != 1:
        return None
    headers = diffs._line_starts(section, "@@ ")
    if len(headers) != len(patch[0]):
        return None
    return diffs._sliced(section, headers, patch[0], whole=False)


def outcome(read, section):
    try:
        return read(section)
    except UnidiffParseError as error:
        return ("error", str(error))


_text = st.text(st.sampled_from("ab (),#+-\\@"), max_size=12)
_body_line = st.one_of(
    st.tuples(st.sampled_from(" +-"), _text).map("".join),
    st.just("\\ No newline at end of file"),
    st.just("\\ something else"),
    st.just(""),
    st.just("@@ stray"),
)


@st.composite
def sections(draw):
    """One file's section of a git diff, often well formed, often damaged in the ways unidiff
    and the quick reader must agree about: wrong counts, marker lines, blank or foreign lines,
    hunks of no lines, headers that are not hunk headers, lines after the last hunk."""
    path = draw(st.sampled_from(["e/x.py", "a b.py", "k.cu"]))
    header = [f"diff --git a/{path} b/{path}"]
    kind = draw(st.sampled_from(["modified", "added", "deleted", "renamed", "plain", "extra", "plain extra"]))
    if kind == "added":
        header += ["new file mode 100644", "index 0..1", "--- /dev/null", f"+++ b/{path}"]
    elif kind == "deleted":
        header += ["deleted file mode 100644", "index 1..0", f"--- a/{path}", "+++ /dev/null"]
    elif kind == "renamed":
        header += ["similarity index 90%", f"rename from old/{path}", f"rename to {path}"]
        header += [f"--- a/old/{path}", f"+++ b/{path}"]
    elif kind.startswith("plain"):
        header = [f"--- a/{path}", f"+++ b/{path}"]
    else:
        header += ["index 1..2 100644", f"--- a/{path}", f"+++ b/{path}"]
    if kind.endswith("extra"):  # a line between the file header and the first hunk
        header.append(draw(st.sampled_from(["", "garbage", "index 3..4"])))
    body = []
    for _ in range(draw(st.integers(0, 3))):
        lines = draw(st.lists(st.tuples(st.sampled_from(" +-"), _text).map("".join), max_size=6))
        source = sum(line[0] in " -" for line in lines) + draw(st.sampled_from([0, 0, 0, 1, -1]))
        target = sum(line[0] in " +" for line in lines) + draw(st.sampled_from([0, 0, 0, 1, -1]))
        start = 0 if kind == "added" else 3
        body.append(f"@@ -{start},{max(source, 0)} +{3},{max(target, 0)} @@ def f():")
        if draw(st.booleans()):
            lines.insert(draw(st.integers(0, len(lines))), draw(_body_line))
        body += lines
    body += draw(st.lists(_body_line, max_size=2))
    return "\n".join(header + body) + draw(st.sampled_from(["\n", "", "\n\n"]))


@given(sections())
@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_reading_a_files_header_alone_gives_what_reading_the_whole_section_gave(section):
    assert outcome(diffs._quick, section) == outcome(whole_section_reading, section)


def test_a_plain_section_is_read_from_its_header_alone():
    section = "diff --git a/x.py b/x.py\nindex 1..2\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    headers = diffs._line_starts(section, "@@ ")
    assert diffs._from_headers(section, headers) is not None
    # A marker after a hunk's last line that unidiff would not read as one: not sure, the
    # whole section is read as before.
    damaged = section + "\\ not the marker\n"
    patched = diffs._from_headers(damaged, headers)
    assert patched is not None and diffs._sliced(damaged, headers, patched, whole=True) is None


# --- the lines of code of a hunk ----------------------------------------------------------------

_lines = st.lists(
    st.tuples(st.sampled_from(" +-\\"), st.sampled_from(["", "  ", "x = 1", "# c", "  // c", "/* c", "\0x"])),
    max_size=12,
)


@given(_lines, st.sampled_from([(), ("#",), ("//", "/*")]))
def test_a_hunks_lines_of_code_are_what_is_code_line_says_line_by_line(lines, markers):
    hunk = diffs.Hunk(1, 1, "", [text + "\n" for _, text in lines], "".join(kind for kind, _ in lines))
    expected = [
        index
        for index, (kind, text) in enumerate(lines)
        if kind in "+-" and changes.is_code_line(text + "\n", markers)
    ]
    assert hunk.code_changes(markers) == (expected, [lines[i][1].strip() for i in expected])
    assert hunk.code_changes(markers) == (expected, [lines[i][1].strip() for i in expected])  # once more
    assert hunk.lines_of(" -") == [text + "\n" for kind, text in lines if kind in " -"]
    assert hunk.indices_of("+") == [index for index, (kind, _) in enumerate(lines) if kind == "+"]


def test_a_hunk_whose_types_and_lines_disagree_is_refused():
    with pytest.raises(ValueError, match="2 lines with 1 line types"):
        diffs.Hunk(1, 1, "", ["a\n", "b\n"], "+").lines_of("+")


# --- the punctuation count ----------------------------------------------------------------------

_side = st.text(st.sampled_from("ab_1 \n,()\\=.:[]+-*<>;x"), max_size=30)


@given(_side, _side)
@settings(max_examples=500)
@example("x = (y)", "x = y")  # parentheses: what a formatter adds
@example("f(a, b,)", "f(a, b)")  # a trailing comma
@example("a.b[c]", "d.e[f]")  # names
def test_sides_that_could_match_or_be_reformatted_have_the_same_punctuation(old, new):
    sides = (old, new)
    if changes._may_match(sides) or changes._same_characters(sides):
        assert changes._same_punctuation(sides)


MORE_LINES = st.sampled_from(
    [
        "    x = y[0]",
        "    x = y[1]",
        "    x=y[0]",
        "    x = (y[0])",
        "    a, b = b, a",
        "    (a, b) = (b, a)",
        "    return a <= b",
        "    return b >= a",
        "    z = x.y.z",
        "    z = x.w.z",
        "    from m import (a, b)",
        "    from m import a",
        "    import m.n as k",
        "    s = 'a:b'",
        '    s = "a;b"',
        "    t = {a: b}",
    ]
)


def judged_without(text: str, shortcut: str) -> list[object]:
    """`judged` with the quick test ``shortcut`` of `changes` passing every hunk on (the oracle)."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(changes, shortcut, lambda sides: True)
        return judged(text)


@settings(max_examples=400, deadline=None)
@given(
    removed=st.lists(MORE_LINES | LOG_LINES, max_size=5),
    added=st.lists(MORE_LINES | LOG_LINES, max_size=5),
    before=st.lists(MORE_LINES, max_size=2),
)
@example(removed=["    x = y[0]"], added=["    x = (y[0])"], before=[])  # cosmetic
@example(
    removed=["    from m import (a, b)"], added=["    from m import a", "    from m import b"], before=[]
)
@example(removed=["    z = x.y.z"], added=["    z = x.w.z"], before=["    z = x.y.z"])
def test_counting_punctuation_first_never_changes_a_judgement(removed, added, before):
    text = file_diff("e/x.py", removed, added, ("def f(x):", *before), ("    return x",))
    assert judged(text) == judged_without(text, "_same_punctuation")


IMPORT_LINES = st.sampled_from(
    [
        "from m import a",
        "from m import b",
        "from m import a, b",
        "from m import b, a",
        "from m import (a, b)",
        "from m import (",
        "    a,",
        "    b,",
        ")",
        "from m import a as k",
        "from m.n import c",
        "from .m import a",
        "import m",
        "import m.n",
        "import m.n as k",
        "import m, q",
        "import q",
        "from q import a",
        "from m import *",
        "a,",
        "k",
    ]
)
CONTEXT_LINES = st.sampled_from(
    ["import os", "from m import a", "x = a(b)", 'logger.info("a %s", b)', "k = 'm'", "# from m import z"]
)
INCLUDE_LINES = st.sampled_from(
    ['#include "a.h"', '#include "b.h"', "#include <c/d.h>", "#include <c/e.h>", '#include "a/b.h"']
)


@settings(max_examples=500, deadline=None)
@given(
    removed=st.lists(IMPORT_LINES, max_size=5),
    added=st.lists(IMPORT_LINES, max_size=5),
    before=st.lists(CONTEXT_LINES, max_size=2),
    after=st.lists(CONTEXT_LINES, max_size=2),
)
@example(removed=["from m import a", "from m import b"], added=["from m import a, b"], before=[], after=[])
@example(
    removed=["from m import a, b"], added=["from m import (", "    b,", "    a,", ")"], before=[], after=[]
)
@example(removed=["import m.n as k"], added=["import m.n as k", "import q"], before=[], after=[])
@example(removed=["from m import a"], added=["from q import a"], before=["x = a(b)"], after=[])
def test_comparing_names_first_never_changes_the_judgement_of_an_import_hunk(removed, added, before, after):
    """An import-only hunk that the other quick tests rule out still goes to tokens when its
    sides use the same names (a reordered, merged or split block); one with another name does not."""
    text = file_diff("e/x.py", removed, added, tuple(before), tuple(after) or ("x = 1",))
    assert judged(text) == judged_without(text, "_same_names")


@settings(max_examples=200, deadline=None)
@given(removed=st.lists(INCLUDE_LINES, max_size=4), added=st.lists(INCLUDE_LINES, max_size=4))
@example(removed=['#include "a.h"', '#include "b.h"'], added=['#include "b.h"', '#include "a.h"'])
def test_comparing_names_first_never_changes_the_judgement_of_an_include_hunk(removed, added):
    text = file_diff("k/x.cu", removed, added, ("#pragma once",), ("int x;",))
    assert judged(text) == judged_without(text, "_same_names")


def test_an_import_hunk_that_only_reorders_is_still_cosmetic_and_one_that_adds_a_name_is_not():
    reordered = file_diff("e/x.py", ["from m import a", "from m import b"], ["from m import b, a"])
    added = file_diff("e/x.py", ["from m import a"], ["from m import a, b"])
    assert judged(reordered) == ["only comments, docstrings, log messages or formatting changed"]
    assert judged(added) == [None]


def hunk_length_line_by_line(types: str, source_length: int, target_length: int) -> int:
    """How `diffs._hunk_length` counted before it had its shortcut for hunks of exact counts."""
    old = new = 0
    for index, kind in enumerate(types):
        if old >= source_length and new >= target_length and kind != "\\":
            return index
        if kind in " -":
            old += 1
        if kind in " +":
            new += 1
    return len(types)


@given(st.text(st.sampled_from(" +-\\?"), max_size=12), st.integers(0, 8), st.integers(0, 8))
@settings(max_examples=1000)
@example(" -+\\\\ ", 2, 2)
@example("\\\\ +", 0, 0)
def test_the_length_of_a_last_hunk_is_counted_as_line_by_line(types, source_length, target_length):
    assert diffs._hunk_length(types, source_length, target_length) == hunk_length_line_by_line(
        types, source_length, target_length
    )


def what_perfbot_reads(patched) -> tuple[object, ...]:
    return (
        patched.source_file,
        patched.target_file,
        patched.source_timestamp,
        patched.target_timestamp,
        patched.is_binary_file,
        patched.source_mode,
        patched.target_mode,
        patched.diff_line_no,
        list(patched.patch_info or ()),
        patched.path,
        patched.is_rename,
        len(patched),
    )


_name = st.sampled_from(["x.py", "a b.py", '"q.py"', "t\tab.py", "dir/x.cu", "y"])


@st.composite
def git_headers(draw):
    """Four header lines, mostly of the commonest shape, with the variations unidiff tells apart."""
    old, new = draw(_name), draw(_name)
    first = draw(st.sampled_from([f"diff --git a/{old} b/{new}", f"diff --git {old} {new}", "diff --git x"]))
    index = draw(
        st.sampled_from(["index 1a..2b 100644", "index 1a..2b", "index zz..2b 100755", "new mode 1"])
    )
    source = draw(st.sampled_from([f"--- a/{old}", f"--- a/{old}\t2024-01-01", "--- /dev/null", "+++ x"]))
    target = draw(st.sampled_from([f"+++ b/{new}", f"+++ b/{new}\tnow", f"+++ b/{old}", "+++ /dev/null"]))
    lines = [first, index, source, target]
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, 4)), draw(st.sampled_from(["similarity index 9%", "", "@@"])))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


@given(git_headers())
@settings(max_examples=800, deadline=None)
@example("diff --git a/x.py b/x.py\nindex 1a..2b 100644\n--- a/x.py\n+++ b/x.py\n")
def test_the_commonest_header_is_read_as_unidiff_reads_it(header):
    fast = diffs._plain_git_header(header)
    try:
        patch = PatchSet(header, metadata_only=True)
    except UnidiffParseError:
        assert fast is None
        return
    if fast is not None:
        assert len(patch) == 1
        assert what_perfbot_reads(fast) == what_perfbot_reads(patch[0])


# --- the log-call hint ---------------------------------------------------------------------------

_LOG_FRAGMENTS = st.sampled_from(
    ["log", "logger", "logging", "LOGGER", "warnings", "print", "printf", "fprintf", "pprint", "print_once"]
    + ["x", "_", "é", ".", " ", "\n", "(", "info", "obj.", "my", "2", "catalog", "blog"]
)


# `changes._LOG_HINT` as it was, before it had a look-ahead to skip characters by.
LOG_HINT_AS_IT_WAS = re.compile(
    r"(?:logger|logging|\blog|LOGGER|warnings)\s*\.\s*\w+\s*\(|"
    r"\b(?:print|printf|fprintf|pprint|print_once)\s*\("
)


def log_hint_as_one_pattern(text: str) -> bool:
    """`changes._may_log` as it was: the hint, one alternation, searched whole."""
    return ("log" in text or "LOG" in text or "warnings" in text or "print" in text) and bool(
        LOG_HINT_AS_IT_WAS.search(text)
    )


@given(st.lists(_LOG_FRAGMENTS, max_size=12).map("".join))
@settings(max_examples=2000)
@example("catalog.x(")  # "log" inside a word: no log call
@example("xlog.log(")
@example("é print(x)")
@example("myprint_once (")
@example("fprintf(x) pprint (y)")
@example("blog.x( log.y(")
def test_the_log_hint_searched_alternative_by_alternative_finds_what_the_whole_pattern_finds(text):
    assert changes._may_log(text) == log_hint_as_one_pattern(text)
    # and the hint with its look-ahead finds the same calls, at the same places
    assert [m.span() for m in changes._LOG_HINT.finditer(text)] == [
        m.span() for m in LOG_HINT_AS_IT_WAS.finditer(text)
    ]
