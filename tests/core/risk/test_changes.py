"""Which hunks change no behaviour: comments, docstrings, log messages, formatting, renames."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.risk import changes
from bot.core.risk import diff as diffs


def file_diff(
    path: str,
    removed: list[str],
    added: list[str],
    before: tuple[str, ...] = ("def f(x):",),
    after: tuple[str, ...] = ("    return x",),
) -> str:
    lines = [
        f"diff --git a/{path} b/{path}",
        f"--- a/{path}",
        f"+++ b/{path}",
        f"@@ -10,{len(before) + len(removed) + len(after)} +10,{len(before) + len(added) + len(after)} @@",
        *(" " + line for line in before),
        *("-" + line for line in removed),
        *("+" + line for line in added),
        *(" " + line for line in after),
    ]
    return "\n".join(lines) + "\n"


def kinds(text: str) -> list[str | None]:
    return [h.kind if h else None for h in changes.classify(diffs.parse(text).files[0])]


@pytest.mark.parametrize(
    ("removed", "added"),
    [
        (["    foo(a, b)"], ["    foo(a,", "        b)"]),  # line breaks
        (["    y = 2  # old"], ["    y = 2  # a new comment"]),
        (["    logger.info('a %s', x)"], ["    logger.info(", "        'b %s %s', x, y)"]),
        ([], ["    logger.debug(f'x={x}')"]),  # a log line added
        ([], ["    self.logger.warning_once('slow path')"]),
        (["    raise ValueError('bad')"], ["    raise ValueError(f'very bad: {x}')"]),
        (["    assert x > 0, 'x'"], ["    assert x > 0, f'x must be positive, got {x}'"]),
        (['    """Old doc."""'], ['    """New doc,', '    on two lines."""']),
        (["    print('x')"], ["    print('y', z)"]),
    ],
)
def test_changes_that_cannot_alter_behaviour_are_cosmetic(removed, added):
    assert kinds(file_diff("engine/worker.py", removed, added)) == ["cosmetic"]


@pytest.mark.parametrize(
    ("removed", "added"),
    [
        (["    (a, b) = f(x)"], ["    a, b = f(x)"]),  # a formatter's redundant parentheses
        (["    a, b = (f(x), 1)"], ["    a, b = f(x), 1"]),
        (["    return (x)"], ["    return x"]),
        (["    y = a + b"], ["    y = (", "        a + b", "    )"]),  # wrapped for length
        (["    if (ready):"], ["    if ready:"]),
        (["    for (k, v) in (items):"], ["    for k, v in items:"]),
        (["    foo(a, b)"], ["    foo(", "        a,", "        b,", "    )"]),  # a trailing comma
        (["    x = [1, 2]"], ["    x = [1, 2,]"]),
        (["    y = re.match(p, s,)"], ["    y = re.match(p, s)"]),
        (["    y = re.match(p,)"], ["    y = re.match(p)"]),  # a method named like a soft keyword
        (["    y = type(x,)"], ["    y = type(x)"]),  # soft keywords that are calls before a bracket
        (["    y = _('m',)"], ["    y = _('m')"]),
        (["    x = {'k': 1}"], ['    x = {"k": 1,}']),  # quotes of a plain string
        (["    total = a + \\", "        b"], ["    total = a + b"]),  # a line continuation
        (
            ["    from engine.comm import all_reduce"],
            ["    from engine.comm import (", "        all_reduce,", "    )"],
        ),
        (["    import torch", "    import os"], ["    import os", "    import torch"]),  # import order
        (
            ["    from a import x, y", "    from b import z"],
            ["    from b import z", "    from a import y", "    from a import x"],
        ),
    ],
)
def test_what_formatters_change_is_cosmetic(removed, added):
    assert kinds(file_diff("engine/worker.py", removed, added)) == ["cosmetic"]


def test_a_signature_gaining_a_trailing_comma_and_a_blank_line_after_a_docstring_are_cosmetic():
    """Two hunks of SGLang 07a24f1a ("update pre-commit config"), as its diff has them."""
    text = (
        "diff --git a/p/parallel_state.py b/p/parallel_state.py\n--- a/p/parallel_state.py\n"
        "+++ b/p/parallel_state.py\n@@ -21,6 +21,7 @@ If you only need\n  parallelism, you can skip\n"
        '  steps.\n """\n+\n import contextlib\n import gc\n import logging\n'
        "@@ -79,7 +80,7 @@ class P2PWork:\n \n \n def _split_tensor_dict(\n"
        "-    tensor_dict: Dict[str, Union[torch.Tensor, Any]]\n"
        "+    tensor_dict: Dict[str, Union[torch.Tensor, Any]],\n"
        " ) -> Tuple[List[Tuple[str, Any]], List[torch.Tensor]]:\n"
        '     """Split the tensor dictionary into two parts:\n'
        "     1. A list of (key, value) pairs. If the value is a tensor, it is replaced\n"
    )
    assert kinds(text) == ["cosmetic", "cosmetic"]


@pytest.mark.parametrize(
    ("path", "removed", "added"),
    [
        ("engine/worker.py", ["    x = (a,)"], ["    x = (a)"]),  # a one-element tuple is not its element
        ("engine/worker.py", ["    x[a,] = 1"], ["    x[a] = 1"]),
        ("engine/worker.py", ["    f((a, b))"], ["    f(a, b)"]),  # one argument, or two
        ("engine/worker.py", ["    y = (a + b) * c"], ["    y = a + b * c"]),  # precedence
        ("engine/worker.py", ["    assert (a, 'm')"], ["    assert a, 'm'"]),  # a tuple is always true
        ("engine/worker.py", ["    y = v in (a, b)"], ["    y = v in a, b"]),
        ("engine/worker.py", ["    y = c if d else (a, b)"], ["    y = c if d else a, b"]),
        ("engine/worker.py", ["    import torch"], ["    import numpy"]),
        ("engine/worker.py", ["    from a import x"], ["    from b import x"]),
        (
            "engine/worker.py",
            ["    import torch", "    y = 1"],
            ["    y = 1", "    import torch"],
        ),  # moved past code
        ("engine/worker.py", ["    match (x,):"], ["    match (x):"]),  # a tuple subject (soft keywords)
        ("engine/worker.py", ["    match x:", "        case (a,):"], ["    match x:", "        case (a):"]),
        ("engine/worker.py", ["    y = match[a,]"], ["    y = match[a]"]),  # a variable named match
        # Outside Python, quotes and backslashes mean something: a char is no string, a shell
        # expands only in double quotes, a continuation joins lines into one command or macro.
        ("csrc/attention/attention_kernels.cu", ["  if (c == 'a') {"], ['  if (c == "a") {']),
        ("src/lexer.rs", ["    let c = 'a';"], ['    let c = "a";']),
        ("scripts/run.sh", ["echo '$HOME'"], ['echo "$HOME"']),
        ("scripts/run.sh", ["python run.py \\", "  --fast"], ["python run.py", "  --fast"]),
        ("csrc/ops.h", ["#define A(x) \\", "  (x)"], ["#define A(x)", "  (x)"]),
    ],
)
def test_what_formatters_never_do_is_not_cosmetic(path, removed, added):
    context = {} if path.endswith(".py") else {"before": ("{",), "after": ("}",)}
    assert kinds(file_diff(path, removed, added, **context)) == [None]


def test_includes_in_another_order_are_cosmetic_in_c_like_files():
    sorted_ = file_diff(
        "csrc/a.cu",
        ["#include <b.h>", "#include <a.h>"],
        ["#include <a.h>", "#include <b.h>"],
        before=("// kernels",),
        after=("int x;",),
    )
    assert kinds(sorted_) == ["cosmetic"]
    other = file_diff(
        "csrc/a.cu", ["#include <b.h>"], ["#include <c.h>"], before=("// k",), after=("int x;",)
    )
    assert kinds(other) == [None]


@pytest.mark.parametrize(
    ("removed", "added"),
    [
        (["    v = t.cpu()"], ["    v = t.item()"]),
        (["    n = 256"], ["    n = 1024"]),
        (['    return "float16"'], ['    return "bfloat16"']),  # a value, not a message
        (["    y = torch.float16"], ["    y = torch.bfloat16"]),  # one name swapped is not a rename
        (["    a, b = b, a"], ["    b, a = a, b"]),  # the old names are still in use
        (["    self.print('x')"], ["    self.print('y')"]),  # a method called print
        (["    logger.info('a')"], ["    logger.info('a')", "    torch.cuda.synchronize()"]),
    ],
)
def test_changes_of_code_are_not(removed, added):
    assert kinds(file_diff("engine/worker.py", removed, added)) == [None]


def test_a_consistent_rename_used_twice_or_defined_is_a_rename():
    used_twice = changes.classify(
        diffs.parse(
            file_diff(
                "engine/worker.py",
                ["    foo = bar(x)", "    return foo"],
                ["    baz = bar(x)", "    return baz"],
            )
        ).files[0]
    )
    assert used_twice[0].kind == "rename" and used_twice[0].renames == (("foo", "baz"),)
    assert used_twice[0].describe() == "rename only (foo -> baz)"
    defined = kinds(
        file_diff(
            "engine/worker.py",
            ["def old_name(a):"],
            ["def new_name(a):"],
            before=("",),
            after=("    return a",),
        )
    )
    assert defined == ["rename"]


def test_an_environment_variable_renamed_in_strings_is_a_rename():
    removed = ['    a = os.environ.get("NCCL_OLD_KNOB")', '    b = os.environ.get("NCCL_OLD_KNOB")']
    added = [line.replace("OLD", "NEW") for line in removed]
    assert kinds(file_diff("engine/comm.py", removed, added)) == ["rename"]


def test_renames_must_agree_across_the_hunks_of_a_file():
    agree = (
        file_diff("e/w.py", ["    foo = 1"], ["    bar = 1"])
        + file_diff("e/w.py", ["    return foo"], ["    return bar"]).split("\n", 3)[3]
    )
    disagree = (
        file_diff("e/w.py", ["    foo = 1"], ["    bar = 1"])
        + file_diff("e/w.py", ["    return foo"], ["    return baz"]).split("\n", 3)[3]
    )
    assert kinds(agree) == ["rename", "rename"]
    assert kinds(disagree) == [None, None]


def test_cuda_comments_and_unknown_languages():
    cuda = file_diff(
        "csrc/a.cu", ["  int x = 1; // old"], ["  int x = 1; /* new */"], before=("{",), after=("}",)
    )
    assert kinds(cuda) == ["cosmetic"]
    assert kinds(file_diff("data/blob.bin2", ["a"], ["b"])) == [None]


def test_added_and_deleted_files_are_never_harmless():
    text = (
        "diff --git a/e/new.py b/e/new.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/e/new.py\n@@ -0,0 +1 @@\n+# only a comment\n"
    )
    assert kinds(text) == [None]


@given(
    st.lists(st.text(alphabet="ab()\"'#=.\\ \t:,", max_size=30), max_size=6),
    st.lists(st.text(alphabet="ab()\"'#=.\\ \t:,", max_size=30), max_size=6),
)
@settings(max_examples=300, deadline=None)
def test_any_lines_classify_without_error(removed, added):
    found = changes.classify(diffs.parse(file_diff("e/x.py", removed, added)).files[0])
    assert len(found) == 1
    if removed == added:
        assert found[0] is not None and found[0].kind == "cosmetic"


def test_hostile_lines_classify_in_linear_time():
    # Unterminated strings and comments and deep brackets: each costs its length, once.
    lines = ['"' + "a" * 20_000, "'''" + "b" * 20_000, "(" * 5_000, "/*" + "c" * 20_000]
    assert kinds(file_diff("e/x.py", lines, lines[::-1])) == [None]
    assert kinds(file_diff("e/x.cu", lines, lines[::-1])) == [None]


def test_python_indentation_of_a_statement_is_code_but_of_a_continuation_is_not():
    dedent = file_diff(
        "e/x.py", ["        y()"], ["    y()"], before=("    if a:", "        x()"), after=("",)
    )
    assert kinds(dedent) == [None]  # y() left the if block
    rewrap = file_diff(
        "e/x.py",
        [
            "        self._refcounts: Dict[BlockId,",
            "                              RefCount] = {index: 0",
            "                                           for index in deduped}",
        ],
        [
            "        self._refcounts: Dict[BlockId, RefCount] = {",
            "            index: 0",
            "            for index in deduped",
            "        }",
        ],
        before=("    def __init__(self):",),
        after=("",),
    )
    assert kinds(rewrap) == ["cosmetic"]


def test_lines_moved_past_their_context_are_a_change():
    moved = (
        "diff --git a/e/x.py b/e/x.py\n--- a/e/x.py\n+++ b/e/x.py\n@@ -10,4 +10,4 @@\n"
        " def f(g):\n+    r = use(g)\n     g = convert(g)\n-    r = use(g)\n     return r\n"
    )
    assert kinds(moved) == [None]
