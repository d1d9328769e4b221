"""Risk scoring at its edges: caps, counts, orders and places, each pinned to what the docs say
(the mutants of `make mutation` that the broader tests of test_scoring.py let pass)."""

from __future__ import annotations

import math

from bot.core.risk import reasons
from bot.core.risk import scoring as risk
from tests.core.risk.test_scoring import file_diff, rules_fired, score

COMM = "python/sglang/srt/distributed/device_communicators/pynccl.py"
PLAIN = "engine/util.py"


def hunk(
    path: str,
    removed: list[str],
    added: list[str],
    header: str = "",
    start: int = 10,
    context: tuple[str, str] = ("    x = 1", "    return x"),
) -> str:
    """The hunk alone (no file header), to follow another hunk of the same file."""
    return file_diff(path, removed, added, header, context, start).split("\n", 4)[4]


def test_size_grows_with_lines_and_files_and_stops_at_ten():
    one = risk._size_signal([risk.FileRisk("a.py", None, "modified", False, 9, 0, 0, None, [], code_lines=9)])
    assert one is not None and one.weight == round(2.5 * math.log10(10), 1)
    two = risk._size_signal(
        [risk.FileRisk(p, None, "modified", False, 5, 4, 0, None, [], code_lines=9) for p in ("a.py", "b.py")]
    )
    assert two is not None and two.weight == round(2.5 * math.log10(19) + 0.5, 1)
    assert two.description == "size: 18 changed lines of code in 2 non-cold files" and two.path == "a.py"
    huge = risk._size_signal(
        [risk.FileRisk("a.py", None, "modified", False, 10**6, 0, 0, None, [], code_lines=10**6)]
    )
    assert huge is not None and huge.weight == 10.0 == risk._SIZE_CAP
    cold = risk.FileRisk("docs/a.md", None, "modified", False, 5, 0, 0, "cold.docs", [], code_lines=5)
    nothing = risk.FileRisk("b.py", None, "modified", False, 5, 0, 0, None, [], code_lines=0)
    assert risk._size_signal([cold, nothing]) is None and risk._size_signal([]) is None


def test_too_many_files_are_cut_with_a_warning_at_the_cap_not_before(monkeypatch):
    assert risk.MAX_FILES == 10_000
    monkeypatch.setattr(risk, "MAX_FILES", 2)
    two = score(file_diff("a.py", ["a = 1"], ["a = 2"]) + file_diff("b.py", ["b = 1"], ["b = 2"]))
    assert not two.warnings and len(two.files) == 2
    three = score(
        file_diff("a.py", ["a = 1"], ["a = 2"])
        + file_diff("b.py", ["b = 1"], ["b = 2"])
        + file_diff("c.py", ["c = 1"], ["c = 2"])
    )
    assert three.warnings == ["3 files changed: only the first 2 were scored"] and len(three.files) == 2


def test_long_paths_are_counted_in_their_warning():
    long = "d/" * 3000 + "x.py"
    report = score(file_diff(long, ["a = 1"], ["a = 2"]) + file_diff(long + "y", ["a = 1"], ["a = 2"]))
    assert report.warnings[0].startswith("2 path(s) longer than")


def test_files_are_listed_by_score_then_hot_before_cold_then_path():
    report = score(
        file_diff("docs/b.md", ["a"], ["b"])
        + file_diff("a/z.py", ["a = 1"], ["a = 2"])
        + file_diff("docs/a.md", ["a"], ["b"])
        + file_diff(COMM, ["        a = 1"], ["        a = 2"], header="def all_reduce(self):")
    )
    assert [f.path for f in report.files] == [COMM, "a/z.py", "docs/a.md", "docs/b.md"]


def test_a_plain_report_has_no_improvement_and_a_file_no_code_lines_until_scored():
    empty = risk.RiskReport(0, "none", "generic", [], [])
    assert (empty.improvement, empty.improvements) == (0, []) and empty.to_dict()["improvement"] == 0
    assert risk.FileRisk("a.py", None, "modified", False, 1, 1, 0, None, []).code_lines == 0


def test_the_path_rule_names_the_first_changed_function_of_the_file():
    text = file_diff(COMM, ["        a = 1"], ["        a = 2"], header="def first(self):", start=10) + hunk(
        COMM, ["        b = 1"], ["        b = 2"], header="def second(self):", start=40
    )
    nccl = next(s for s in score(text).signals if s.rule == "path.pynccl")
    assert (nccl.function, nccl.line) == ("first", 11)


def test_only_token_rules_are_netted_by_direction():
    yaml_text = (
        "risk:\n  rules:\n    - {id: my.alloc-file, kind: path, category: allocation, weight: 20,"
        " description: an allocator file, paths: ['engine/alloc.py']}\n"
    )
    report = score(file_diff("engine/alloc.py", ["    a = torch.zeros(3)"], ["    a = 1"]), yaml_text)
    assert "my.alloc-file" in rules_fired(report)


def test_a_set_up_rule_of_full_weight_lowers_nothing_and_says_nothing():
    yaml_text = (
        "risk:\n  rules:\n    - {id: ours.boot, kind: setup, category: setup, weight: 100,"
        " description: boot, pattern: '^boot$'}\n"
    )
    report = score(file_diff(COMM, ["    a = 1"], ["    a = 2"], header="def boot():"), yaml_text)
    nccl = next(s for s in report.signals if s.rule == "path.pynccl")
    assert (nccl.weight, nccl.note, nccl.full_weight) == (40, None, None)


def test_many_set_up_functions_are_named_three_and_counted():
    names = ["__init__", "load_weights", "init_a", "init_b", "init_c"]
    text = file_diff(COMM, ["        a = 1"], ["        a = 2"], header=f"def {names[0]}(self):", start=10)
    for number, name in enumerate(names[1:], 1):
        text += hunk(
            COMM, ["        a = 1"], ["        a = 2"], header=f"def {name}(self):", start=10 + 30 * number
        )
    nccl = next(s for s in score(text).signals if s.rule == "path.pynccl")
    assert nccl.note == "only set-up code changed: __init__(), load_weights(), init_a() and 2 more"


def test_a_long_function_name_is_cut_to_sixty_characters_in_a_reason():
    name = "init_" + "x" * 70
    nccl = next(
        s
        for s in score(
            file_diff(COMM, ["        a = 1"], ["        a = 2"], header=f"def {name}(self):")
        ).signals
        if s.rule == "path.pynccl"
    )
    assert nccl.note == f"only set-up code changed: {name[:57]}...()"
    assert reasons.only_setup_code(["x" * 60]) == f"only set-up code changed: {'x' * 60}()"
    assert reasons.in_setup_code("x" * 61) == f"in set-up code ({'x' * 57}...())"


def test_five_runtime_packages_moved_show_three_and_a_count():
    pins = ["torch", "triton", "flashinfer-python", "xformers", "deep-gemm"]
    report = score(
        file_diff(
            "requirements.txt",
            [f"{p}==1.0" for p in pins],
            [f"{p}==2.0" for p in pins],
            context=("numpy==1", "scipy==1"),
        )
    )
    upgrade = next(s for s in report.signals if s.rule == "dependency.runtime")
    assert upgrade.match.endswith(" and 2 more") and upgrade.match.count(" -> ") == 3
    assert upgrade.count == 5


def test_an_async_def_inside_a_hunk_names_its_function():
    report = score(
        file_diff(COMM, [], ["async def forward_decode(self, batch):", "    return batch"], context=("", ""))
    )
    assert any(s.rule == "function.forward" and s.function == "forward_decode" for s in report.signals)


def test_a_def_on_the_hunks_first_line_names_the_lines_after_it():
    text = (
        f"diff --git a/{COMM} b/{COMM}\n--- a/{COMM}\n+++ b/{COMM}\n@@ -10,2 +10,2 @@ def other():\n"
        " def all_reduce(self, x):\n-    y = 1\n+    y = 2\n"
    )
    collective = next(s for s in score(text).signals if s.rule == "function.collective")
    assert (collective.function, collective.line, collective.side) == ("all_reduce", 11, "old")


def test_a_change_on_the_hunks_very_first_line_is_found():
    text = (
        f"diff --git a/{COMM} b/{COMM}\n--- a/{COMM}\n+++ b/{COMM}\n@@ -10,2 +10,2 @@ def all_reduce(self):\n"
        "-    y = 1\n+    y = 2\n     return y\n"
    )
    collective = next(s for s in score(text).signals if s.rule == "function.collective")
    assert (collective.line, collective.side) == (10, "old")


def test_the_file_itself_places_a_change_after_leading_context_lines():
    lines = [
        "class Comm:",
        "    def all_reduce(self, x):",
        "        a = 1",
        "        b = 2",
        "        c = 3",
        "        return x",
        "",
        "    def other(self):",
        "        return 1",
    ]
    text = (
        f"diff --git a/{COMM} b/{COMM}\n--- a/{COMM}\n+++ b/{COMM}\n@@ -3,4 +3,4 @@ class Comm:\n"
        "         a = 1\n         b = 2\n-        c = 3\n+        c = 4\n         return x\n"
    )
    collective = next(
        s for s in score(text, source=lambda path: lines).signals if s.rule == "function.collective"
    )
    assert collective.function == "all_reduce"


def test_a_hunk_header_naming_a_call_gives_the_function():
    text = (
        f"diff --git a/{COMM} b/{COMM}\n--- a/{COMM}\n+++ b/{COMM}\n@@ -10,2 +10,2 @@ all_reduce(tensor)\n"
        "-    y = 1\n+    y = 2\n"
    )
    assert any(s.function == "all_reduce" for s in score(text).signals)


def test_enclosing_function_bounds_siblings_decorators_and_comments():
    lines = [
        "def first():",
        "    a = 1",
        "",
        "@decorator",
        "def second():",
        "    # a comment",
        "    b = 2",
        "    return b",
    ]
    assert risk.enclosing_function(lines, 8) == "second"  # the last line
    assert risk.enclosing_function(lines, 1) is None and risk.enclosing_function(lines, 0) is None
    assert risk.enclosing_function(lines, 9) is None
    assert risk.enclosing_function(lines, 3) == "first"  # a blank line belongs to what is above it
    assert risk.enclosing_function(lines, 2) == "first"
    siblings = ["def a():", "    pass", "def b():"]
    assert risk.enclosing_function(siblings, 3) is None  # a def is not inside the def above it
    tabs = ["class K:", "\tdef f(self):", "\t\treturn 1"]
    assert risk.enclosing_function(tabs, 3) == "f"


def test_a_token_before_a_trailing_comment_still_counts():
    report = score(
        file_diff(
            COMM,
            [],
            ["        torch.cuda.synchronize()  # needed before the copy"],
            header="def all_reduce(self, x):",
        )
    )
    assert "token.host-sync" in rules_fired(report)


def test_a_token_rule_match_is_cut_to_eighty_characters():
    yaml_text = (
        "risk:\n  rules:\n    - {id: my.long, kind: token, category: mine, weight: 10,"
        " description: long, pattern: 'z{100}'}\n"
    )
    report = score(file_diff(PLAIN, [], ["    a = '" + "z" * 100 + "'"]), yaml_text)
    mine = next(s for s in report.signals if s.rule == "my.long")
    assert mine.match == "z" * 80


def test_one_rule_twice_on_a_line_counts_twice_and_across_files_adds_up():
    twice = score(
        file_diff(COMM, [], ["        a, b = x.item(), y.item()"], header="def all_reduce(self, x):")
    )
    sync = next(s for s in twice.signals if s.rule == "token.host-sync")
    assert sync.count == 2
    other = COMM.replace("pynccl", "custom_all_reduce")
    both = score(
        file_diff(COMM, [], ["        a = x.item()"], header="def all_reduce(self, x):")
        + file_diff(other, [], ["        a = x.item()"], header="def all_reduce(self, x):")
    )
    assert next(s for s in both.signals if s.rule == "token.host-sync").count == 2


def test_two_rules_of_one_category_and_weight_at_one_line_keep_the_first_and_name_the_second():
    yaml_text = (
        "risk:\n  rules:\n"
        "    - {id: my.a, kind: token, category: mine, weight: 10, description: a, pattern: 'alpha'}\n"
        "    - {id: my.b, kind: token, category: mine, weight: 10, description: b, pattern: 'beta'}\n"
    )
    same_line = score(file_diff(PLAIN, [], ["    alpha = beta"]), yaml_text)
    mine = [s for s in same_line.signals if s.category == "mine"]
    assert [(s.rule, s.also) for s in mine] == [("my.a", ("my.b",))]
    two_lines = score(file_diff(PLAIN, [], ["    alpha = 1", "    beta = 2"]), yaml_text)
    assert sorted(s.rule for s in two_lines.signals if s.category == "mine") == ["my.a", "my.b"]


def test_signals_of_equal_weight_are_ordered_by_path_then_line_then_rule():
    yaml_text = (
        "risk:\n  rules:\n"
        "    - {id: my.a, kind: token, category: one, weight: 10, description: a, pattern: 'alpha'}\n"
        "    - {id: my.b, kind: token, category: two, weight: 10, description: b, pattern: 'beta'}\n"
        "    - {id: my.c, kind: path, category: three, weight: 10, description: c, paths: ['b.py']}\n"
    )
    report = score(
        file_diff("a.py", [], ["    beta = 1", "    alpha = 2"]) + file_diff("b.py", [], ["    c = 1"]),
        yaml_text,
    )
    assert [s.rule for s in report.signals if s.weight == 10] == ["my.b", "my.a", "my.c"]


def test_the_strongest_of_a_category_counts_fully_and_the_next_at_half():
    yaml_text = (
        "risk:\n  rules:\n"
        "    - {id: my.big, kind: path, category: same, weight: 40, description: big, paths: ['a.py']}\n"
        "    - {id: my.small, kind: path, category: same, weight: 10, description: small, paths: ['b.py']}\n"
    )
    report = score(
        file_diff("a.py", ["a = 1"], ["a = 2"]) + file_diff("b.py", ["b = 1"], ["b = 2"]), yaml_text
    )
    path_signals = [s for s in report.signals if s.category == "same"]
    assert risk._combine(path_signals) == round(100 * (1 - (1 - 0.4) * (1 - 0.1 * 0.5)))


# --- places: which function a line sits in -------------------------------------------------------


def raw_hunk(path: str, header: str, start: int, lines: list[str]) -> str:
    """A diff of one file with one hunk of ``lines`` (each with its ' ', '-' or '+'), counted."""
    old = sum(1 for line in lines if line[0] in " -")
    new = sum(1 for line in lines if line[0] in " +")
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -{start},{old} +{start},{new} @@ {header}\n" + "\n".join(lines) + "\n"
    )


def test_a_change_above_a_def_in_its_hunk_belongs_to_the_function_the_hunk_starts_in():
    text = raw_hunk(
        COMM, "def all_reduce(self, x):", 10, ["-        a = 1", " def other(self):", "+    b = 2"]
    )
    by_rule = {s.rule: s for s in score(text).signals}
    assert (by_rule["function.collective"].function, by_rule["function.collective"].line) == (
        "all_reduce",
        10,
    )


def test_a_changed_def_line_at_the_top_of_a_hunk_is_the_first_change():
    text = raw_hunk(COMM, "", 10, ["-def all_reduce(self):", "+def all_reduce(self, x):", "     return 1"])
    collective = next(s for s in score(text).signals if s.rule == "function.collective")
    assert (collective.function, collective.line, collective.side) == ("all_reduce", 10, "old")


def test_the_file_places_a_hunk_by_its_first_change_even_on_the_hunks_first_line():
    # The first change is the hunk's first line: the function is the one around new line 2, not 3.
    lines = ["def all_reduce(self):", "    return 1", "def other(self):", "    return 2"]
    text = raw_hunk(COMM, "", 2, ["-    return 0", "     return 1", "+    x = 1"])
    nccl = next(s for s in score(text, source=lambda path: lines).signals if s.rule == "path.pynccl")
    assert nccl.function == "all_reduce"


def test_the_file_places_a_hunk_at_its_first_change_not_at_the_context_line_above_it():
    # The context line above the change is in a nested function, the change back in the outer one.
    lines = ["def all_reduce(self):", "    def helper():", "        x = 1", "    y = 2", "    return y"]
    text = raw_hunk(COMM, "", 3, ["         x = 1", "+    y = 2", "     return y"])
    collective = next(
        s for s in score(text, source=lambda path: lines).signals if s.rule == "function.collective"
    )
    assert (collective.function, collective.line) == ("all_reduce", 4)


def test_a_comment_at_column_zero_inside_a_function_does_not_end_it():
    lines = ["class A:", "    def f(self):", "        x = 1", "# a note", "        y = 2"]
    assert risk.enclosing_function(lines, 5) == "f"


# --- netting, tokens in comments, counts, size, dependency reasons -------------------------------


def test_a_rewritten_environment_variable_stays_a_risk_only_syncs_copies_and_streams_net_out():
    report = score(
        file_diff(
            COMM,
            ['        os.environ["NCCL_ALGO"] = "ring"'],
            ['        os.environ["NCCL_PROTO"] = "simple"'],
            header="def all_reduce(self, x):",
        )
    )
    env = next(s for s in report.signals if s.rule == "token.nccl-env")
    assert env.count == 2 and report.improvements == []


def test_a_token_before_a_comment_on_a_later_line_of_the_hunk_counts():
    context = ("    some_long_context_line = compute_something(argument)", "    return x")
    report = score(
        file_diff(COMM, [], ["        x.item()  # ok"], header="def all_reduce(self, x):", context=context)
    )
    assert "token.host-sync" in rules_fired(report)


def test_a_files_own_signals_count_a_rule_fired_twice():
    report = score(
        file_diff(
            COMM, [], ["        a = x.item()", "        b = y.item()"], header="def all_reduce(self, x):"
        )
    )
    [file] = report.files
    assert next(s for s in file.signals if s.rule == "token.host-sync").count == 2
    assert any("(2 times)" in reason for reason in file.to_dict()["reasons"])


def test_one_changed_line_of_code_is_a_size_signal():
    size = next(s for s in score(file_diff(PLAIN, [], ["    a = 2"])).signals if s.rule == "size")
    assert (size.weight, size.description) == (0.8, "size: 1 changed lines of code in 1 non-cold file")


def test_three_packages_moved_are_all_named_and_four_show_three_and_a_count():
    def upgrade(pins: list[str]):
        report = score(
            file_diff(
                "requirements.txt",
                [f"{p}==1.0" for p in pins],
                [f"{p}==2.0" for p in pins],
                context=("numpy==1", "scipy==1"),
            )
        )
        return next(s for s in report.signals if s.rule == "dependency.runtime")

    three = upgrade(["torch", "triton", "xformers"])
    assert three.match == "torch 1.0 -> 2.0; triton 1.0 -> 2.0; xformers 1.0 -> 2.0" and three.count == 3
    four = upgrade(["torch", "triton", "xformers", "deep-gemm"])
    assert four.match.endswith("xformers 1.0 -> 2.0 and 1 more") and four.count == 4


def test_three_set_up_functions_are_all_named_with_no_count():
    assert reasons.only_setup_code(["a", "b", "c"]) == "only set-up code changed: a(), b(), c()"
    assert reasons.only_setup_code(["a", reasons.IMPORTS, "a"]) == "only set-up code changed: a(), imports"
