"""Scoring with the lines a map recorded: a change to a mapped function's lines that never ran in
the measured steps (a lazy-init branch, an error path) is set-up code; one to lines that ran keeps
the function's per-step weight."""

from __future__ import annotations

from bot.core import stepmap
from bot.core.risk import callgraph, map_lines
from bot.core.risk import diff as diffs
from bot.core.risk.stepmap_scoring import MapEvidence
from bot.sandbox import sample
from tests.core.risk.test_stepmap_scoring import ALL_REDUCE, BASE, PYNCCL, STATE, base_files, change, score

# The lines of the sample's parallel_state.py that run on a step of two ranks: the lazy getter's
# test and return (not its first-call branch, line 14), the allreduce's test and call.
STATE_RAN = [[13, 13], [15, 15], [19, 19], [21, 21]]
GETTER = {
    "path": STATE,
    "function": "get_tp_communicator",
    "line": 11,
    "calls_per_step": 8,
    "host_share": 0.0002,
}


def lined_map(*functions: dict, lines: dict | None = None) -> stepmap.StepMap:
    data = {
        "schema": 1,
        "commit": BASE,
        "suite": "verify-step",
        "step": "verify step",
        "steps": 10,
        "source": "sys.monitoring",
        "functions": list(functions),
        "kernels": [],
    }
    if lines is not None:
        data["lines"] = lines
    return stepmap.parse(data)


def lined(before: dict[str, str], after: dict[str, str], lines: dict | None, *functions: dict) -> MapEvidence:
    parsed = diffs.parse(change(before, after))
    return MapEvidence(lined_map(*functions, lines=lines), callgraph.build(before), "main", before, parsed)


def decoy(state: str = sample.PARALLEL_STATE) -> str:
    """A ``raise`` added inside the getter's first-call-only branch."""
    return state.replace(
        "        _TP_COMMUNICATOR = PyNcclCommunicator()\n",
        "        _TP_COMMUNICATOR = PyNcclCommunicator()\n"
        "        if _TP_COMMUNICATOR.world_size < 1:\n"
        '            raise RuntimeError("no ranks")\n',
    )


def test_a_raise_added_in_a_mapped_getters_first_call_branch_is_not_per_step():
    base = base_files()
    after = dict(base, **{STATE: decoy()})
    functions_only = score(base, after, lined(base, after, None, ALL_REDUCE, GETTER))
    with_lines = score(base, after, lined(base, after, {STATE: STATE_RAN}, ALL_REDUCE, GETTER))
    assert functions_only.level == "high"  # a mapped function is hot whatever line changed
    assert with_lines.level != "high"
    assert not any(s.category == "per-step" for s in with_lines.signals)
    verdict = lined(base, after, {STATE: STATE_RAN}, ALL_REDUCE, GETTER).judge(
        STATE, "get_tp_communicator", []
    )
    assert verdict is not None and not verdict.per_step
    assert verdict.reason.startswith(
        "the lines changed in get_tp_communicator() (line 15 of the map's commit) did not run in the "
        "10 measured verify steps on main at 5efac9d (it runs 8 times per verify step"
    )


def test_a_raise_opening_the_first_call_branch_is_judged_by_the_branch_not_its_test():
    base = base_files()
    after = dict(
        base,
        **{
            STATE: sample.PARALLEL_STATE.replace(
                "    if _TP_COMMUNICATOR is None:\n",
                '    if _TP_COMMUNICATOR is None:\n        log("made")\n',
            )
        },
    )
    evidence = lined(base, after, {STATE: STATE_RAN}, ALL_REDUCE, GETTER)
    verdict = evidence.judge(STATE, "get_tp_communicator", [])
    assert verdict is not None and not verdict.per_step


def test_a_change_to_a_line_that_ran_keeps_the_per_step_weight():
    base = base_files()
    after = dict(
        base,
        **{
            STATE: sample.PARALLEL_STATE.replace(
                "    return _TP_COMMUNICATOR\n", "    return _TP_COMMUNICATOR.sync()\n"
            )
        },
    )
    report = score(base, after, lined(base, after, {STATE: STATE_RAN}, ALL_REDUCE, GETTER))
    assert any(s.rule == "map.per-step" and s.function == "get_tp_communicator" for s in report.signals)
    added_after_a_line_that_ran = dict(
        base,
        **{
            STATE: sample.PARALLEL_STATE.replace(
                "    return get_tp_communicator().all_reduce(input_)\n",
                "    torch.cuda.synchronize()\n    return get_tp_communicator().all_reduce(input_)\n",
            )
        },
    )
    report = score(
        base,
        added_after_a_line_that_ran,
        lined(base, added_after_a_line_that_ran, {STATE: STATE_RAN}, ALL_REDUCE),
    )
    assert report.level == "high"
    assert any(s.rule == "map.per-step" for s in report.signals)


def test_an_error_path_of_a_mapped_function_is_not_per_step():
    checked = sample.PYNCCL.replace(
        "        dist.all_reduce(tensor, group=self.group)\n",
        "        if tensor.dim() == 0:\n"
        '            raise ValueError("a scalar")\n'
        "        dist.all_reduce(tensor, group=self.group)\n",
    )
    base = base_files(**{PYNCCL: checked})
    after = dict(
        base, **{PYNCCL: checked.replace('raise ValueError("a scalar")', 'raise ValueError("a 0-d tensor")')}
    )
    comm = {
        "path": PYNCCL,
        "function": "PyNcclCommunicator.all_reduce",
        "line": 12,
        "calls_per_step": 32,
        "host_share": 0.025,
    }
    ran = {PYNCCL: [[14, 14], [16, 17]], STATE: STATE_RAN}
    assert lined(base, after, None, comm).judge(PYNCCL, "all_reduce", []).per_step  # type: ignore[union-attr]
    verdict = lined(base, after, ran, comm).judge(PYNCCL, "all_reduce", [])
    assert verdict is not None and not verdict.per_step
    report = score(base, after, lined(base, after, ran, ALL_REDUCE, comm))
    assert not any(s.category == "per-step" for s in report.signals)
    # the test of the error path runs on every step: changing it keeps the weight
    tested = dict(base, **{PYNCCL: checked.replace("if tensor.dim() == 0:", "if tensor.dim() < 1:")})
    assert lined(base, tested, ran, comm).judge(PYNCCL, "all_reduce", []).per_step  # type: ignore[union-attr]


def test_a_file_whose_lines_the_map_did_not_record_keeps_the_functions_weight():
    base = base_files()
    after = dict(base, **{STATE: decoy()})
    verdict = lined(base, after, {PYNCCL: [[14, 17]]}, ALL_REDUCE, GETTER).judge(
        STATE, "get_tp_communicator", []
    )
    assert verdict is not None and verdict.per_step


def test_a_diff_whose_old_side_is_not_the_maps_commit_gives_no_line_evidence():
    base = base_files()
    after = dict(base, **{STATE: decoy()})
    parsed = diffs.parse(change(base, after))
    moved = "# a line the map's commit has above everything\n" + sample.PARALLEL_STATE
    evidence = MapEvidence(
        lined_map(ALL_REDUCE, GETTER, lines={STATE: STATE_RAN}),
        callgraph.build(base),
        "main",
        {STATE: moved},
        parsed,
    )
    verdict = evidence.judge(STATE, "get_tp_communicator", [])
    assert verdict is not None and verdict.per_step


def test_changed_lines_places_removed_and_added_lines_by_statement():
    source = (
        "def f(x, y=1):\n"  # 1
        '    """Doc."""\n'  # 2
        "    global Z\n"  # 3
        "    if x:\n"  # 4
        "        a = 1\n"  # 5
        "    else:\n"  # 6
        "        a = 2\n"  # 7
        "    # a note\n"  # 8
        "    return a\n"  # 9
    )
    ran_lines = {4, 7, 9}

    def ran(line: int) -> bool | None:
        return line in ran_lines

    def places(after: str) -> list[tuple[int, bool, str | None, bool]]:
        parsed = diffs.parse(change({"m.py": source}, {"m.py": after}))
        return [
            (c.line, c.added, c.function, c.ran)
            for c in map_lines.changed_lines(source, parsed.files[0], ran)
        ]

    assert places(source.replace("a = 1", "a = 3")) == [(5, False, "f", False), (5, True, "f", False)]
    assert places(source.replace("a = 2", "a = 3")) == [(7, False, "f", True), (7, True, "f", True)]
    assert places(source.replace("    if x:\n", "    if x:\n        b = 0\n")) == [(4, True, "f", False)]
    assert places(
        source.replace("    else:\n        a = 2\n", "    else:\n        a = 2\n        b = 0\n")
    ) == [(7, True, "f", True)]
    # a docstring and ``global`` run nothing: the statement after them judges what is added there
    assert places(source.replace("    global Z\n", "    global Z\n    b = 0\n")) == [(3, True, "f", True)]
    # a signature, a comment: no evidence
    assert places(source.replace("y=1", "y=2")) == []
    assert places(source.replace("# a note", "# another note")) == []
    # an addition after the function's last line at its body's indentation still belongs to it
    assert places(source + "    b = 0\n") == [(9, True, "f", True)]
    # a new function after it: module level (defined at import), its body not the base's
    assert places(source.replace("    return a\n", "    return a\n\n\ndef g():\n    pass\n")) == [
        (9, True, None, False)
    ]
    assert places(source + "Z = 1\n") == [(9, True, None, False)]


def _places(source: str, after: str, ran_lines: set[int]) -> list[tuple[int, bool, str | None, bool]]:
    parsed = diffs.parse(change({"m.py": source}, {"m.py": after}))
    found = map_lines.changed_lines(source, parsed.files[0], lambda line: line in ran_lines)
    return [(c.line, c.added, c.function, c.ran) for c in found]


def test_an_added_line_belongs_to_a_block_only_up_to_the_code_that_follows_it():
    commented = "def f(x):\n    if x:\n        a = 1\n        # trailing note\n    return a\n"
    after = commented.replace("        # trailing note\n", "        # trailing note\n        b = 2\n")
    assert _places(commented, after, {2, 5}) == [(4, True, "f", False)]  # the comment ends no block
    followed = "def f(x):\n    if x:\n        a = 1\n    b = 2\n    return a\n"
    # deeper than anything open after ``b = 2``: no block of the base's takes it
    assert _places(followed, followed.replace("    b = 2\n", "    b = 2\n        c = 3\n"), {2, 4, 5}) == []
    assert _places(
        followed, followed.replace("        a = 1\n", "        a = 1\n        c = 3\n"), {2, 4, 5}
    ) == [(3, True, "f", False)]


def test_a_removed_line_is_judged_by_the_whole_statement_holding_it():
    source = "def f(x):\n    if x:\n        a = g(\n            1,\n        )\n    return x\n"
    # the added continuation line sits in no block: the removed one judges the change
    assert _places(source, source.replace("            1,\n", "            2,\n"), {2, 6}) == [
        (4, False, "f", False)
    ]
    assert _places(source, source.replace("            1,\n", "            2,\n"), {2, 3, 6})[0] == (
        4,
        False,
        "f",
        True,
    )
    one_line = "def f(x):\n    if x: a = 1\n    return x\n"
    # header and body on one line: the removed line gives no evidence, the added one its neighbour's
    assert _places(one_line, one_line.replace("a = 1", "a = 2"), {2, 3}) == [(2, True, "f", True)]


def test_a_hunk_that_does_not_match_the_maps_source_gives_no_evidence():
    source = "def f(x):\n    if x:\n        a = 1\n    return x\n"
    after = source.replace("a = 1", "a = 2")
    assert _places(source, after, {2, 4}) != []
    parsed = diffs.parse(change({"m.py": source}, {"m.py": after}))
    other = source.replace("return x", "return x + 0")  # a context line differs
    assert map_lines.changed_lines(other, parsed.files[0], lambda line: False) == []
    shorter = "def f(x):\n"  # the hunk runs past the file's end
    assert map_lines.changed_lines(shorter, parsed.files[0], lambda line: False) == []


def test_a_statement_ran_when_any_of_its_own_lines_did_and_a_compound_one_by_its_header():
    source = "def f(x):\n    if x:\n        a = g(\n            1,\n        )\n    return x\n"
    changed = source.replace("            1,\n", "            2,\n")
    assert _places(source, changed, {4})[0] == (4, False, "f", True)  # a later line of it ran
    block = "def f(x):\n    if x:\n        a = 1\n    return x\n"
    after_block = block.replace("    return x\n", "    b = 2\n    return x\n")
    assert _places(block, after_block, {3}) == [(3, True, "f", False)]  # the test's line did not run
    assert _places(block, after_block, {2}) == [(3, True, "f", True)]


def test_a_block_ends_after_its_last_statements_last_line():
    source = "def f(x):\n    if x:\n        a = g(\n    1)\n    return a\n"
    after = source.replace("    1)\n", "    1)\n        b = 2\n")
    assert _places(source, after, {2, 3, 5}) == [(4, True, "f", True)]


def test_a_compound_statements_header_is_all_its_lines_before_the_body():
    source = "def f(x):\n    if (x and\n            x):\n        a = 1\n    return x\n"
    after = source.replace("    return x\n", "    b = 2\n    return x\n")
    assert _places(source, after, {3}) == [(4, True, "f", True)]


def test_a_new_file_in_the_diff_leaves_the_line_verdicts_of_the_others_alone():
    base = base_files()
    after = dict(base, **{STATE: decoy(), "mini_engine/new.py": "def fresh():\n    return 1\n"})
    verdict = lined(base, after, {STATE: STATE_RAN}, ALL_REDUCE, GETTER).judge(
        STATE, "get_tp_communicator", []
    )
    assert verdict is not None and not verdict.per_step


def test_a_reached_functions_cold_lines_name_them_and_at_most_three():
    base = base_files()
    after = dict(
        base,
        **{
            STATE: sample.PARALLEL_STATE.replace(
                "        _TP_COMMUNICATOR = PyNcclCommunicator()\n",
                "        _TP_COMMUNICATOR = PyNcclCommunicator()\n        log(1)\n",
            )
        },
    )
    verdict = lined(base, after, {STATE: STATE_RAN}, ALL_REDUCE).judge(STATE, "get_tp_communicator", [])
    assert verdict is not None and verdict.rule == "map.off-step"
    assert verdict.reason == (
        "the lines changed in get_tp_communicator() (line 15 of the map's commit) did not run in the "
        "10 measured verify steps on main at 5efac9d"
    )
    source = (
        "def f(x):\n    if x:\n        a = 1\n        b = 2\n        c = 3\n        d = 4\n    return x\n"
    )
    changed = source.replace("= 1", "= 5").replace("= 2", "= 6").replace("= 3", "= 7").replace("= 4", "= 8")
    entry = {"path": "m.py", "function": "f", "line": 1, "calls_per_step": 1, "host_share": 0.1}
    evidence = MapEvidence(
        lined_map(entry, lines={"m.py": [[2, 2], [7, 7]]}),
        callgraph.build({"m.py": source}),
        "main",
        {"m.py": source},
        diffs.parse(change({"m.py": source}, {"m.py": changed})),
    )
    verdict = evidence.judge("m.py", "f", [])
    assert verdict is not None and "(line 3, 4, 5 of the map's commit)" in verdict.reason
