"""Scoring with the per-step map: per-step functions, what reaches them, constants they read, and
code in hot files that never runs per step."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core import stepmap
from bot.core.risk import callgraph, map_rules, ruleset, stepmap_scoring
from bot.core.risk import diff as diffs
from bot.core.risk import scoring as risk
from bot.core.risk.stepmap_scoring import MapEvidence
from bot.sandbox import sample

BASE = "5efac9d9d419c62e9688771b6923a7429c927fde"
STATE = "mini_engine/distributed/parallel_state.py"
PYNCCL = "mini_engine/distributed/pynccl.py"
ALL_REDUCE = {
    "path": STATE,
    "function": "tensor_model_parallel_all_reduce",
    "line": 18,
    "calls_per_step": 32,
    "host_share": 0.03,
}
COMM_ALL_REDUCE = {
    "path": PYNCCL,
    "function": "PyNcclCommunicator.all_reduce",
    "line": 12,
    "calls_per_step": 32,
    "host_share": 0.025,
}
MEASURED = "runs 32 times per verify step, 3% of its host time, measured on main at 5efac9d"

# The sample's communicator with an error path: a message built only when the input is unfit.
PYNCCL_CHECKED = (
    sample.PYNCCL.replace(
        "        dist.all_reduce(tensor, group=self.group)\n",
        "        if tensor.dim() == 0:\n"
        "            raise ValueError(_shape_error(tensor))\n"
        "        dist.all_reduce(tensor, group=self.group)\n",
    )
    + """

def _shape_error(tensor) -> str:
    return f"cannot all-reduce a tensor of shape {tuple(tensor.shape)}"
"""
)


def step_map(*functions: dict, commit: str = BASE) -> stepmap.StepMap:
    return stepmap.parse(
        {
            "schema": 1,
            "commit": commit,
            "suite": "verify-step",
            "step": "verify step",
            "steps": 10,
            "source": "sys.monitoring",
            "functions": list(functions),
            "kernels": [],
        }
    )


def change(before: dict[str, str], after: dict[str, str]) -> str:
    parts = []
    for path in sorted(after):
        if before.get(path) == after[path]:
            continue
        lines = difflib.unified_diff(
            before.get(path, "").splitlines(keepends=True),
            after[path].splitlines(keepends=True),
            f"a/{path}",
            f"b/{path}",
        )
        parts.append(f"diff --git a/{path} b/{path}\n" + "".join(lines))
    return "".join(parts)


def score(
    before: dict[str, str], after: dict[str, str], evidence: MapEvidence | None, profile: str = "generic"
) -> risk.RiskReport:
    parsed = diffs.parse(change(before, after))
    rules = ruleset.build(None, [], profile)

    def source(path: str) -> list[str] | None:
        return after[path].splitlines() if path in after else None

    return risk.score(parsed, rules, source, evidence)


def base_files(**replaced: str) -> dict[str, str]:
    files = {STATE: sample.PARALLEL_STATE, PYNCCL: sample.PYNCCL}
    files.update({path.replace("__", "/"): text for path, text in replaced.items()})
    return files


def evidence(files: dict[str, str], *functions: dict, graph: bool = True) -> MapEvidence:
    return MapEvidence(step_map(*functions), callgraph.build(files) if graph else None, "main")


def signal(report: risk.RiskReport, rule: str) -> risk.Signal:
    return next(s for s in report.signals if s.rule == rule)


def test_share_weight_grows_with_the_square_root_of_the_share_up_to_the_ceiling():
    assert stepmap_scoring.share_weight(0.0) == stepmap_scoring.FLOOR == 35.0
    assert stepmap_scoring.share_weight(0.025) == 57.5
    assert stepmap_scoring.share_weight(0.1) == stepmap_scoring.CEILING == 80.0
    assert stepmap_scoring.share_weight(0.7) == 80.0
    assert stepmap_scoring.share_weight(0.03) == 59.6


def test_a_change_to_a_function_on_the_map_is_per_step_hot_and_names_the_measurement():
    base = base_files()
    after = dict(base, **{STATE: sample.PARALLEL_STATE.replace("return input_\n", "return input_ * 1\n")})
    plain = score(base, after, None)
    mapped = score(base, after, evidence(base, ALL_REDUCE))
    found = signal(mapped, "map.per-step")
    assert (found.weight, found.category, found.kind, found.function) == (
        59.6,
        "per-step",
        "function",
        "tensor_model_parallel_all_reduce",
    )
    assert found.sentence() == (
        f"{MEASURED} [map.per-step, +59.6] at {STATE}:20 in tensor_model_parallel_all_reduce()"
    )
    assert mapped.score > plain.score and mapped.level == "high"


def test_a_function_on_the_map_is_hot_whatever_its_file_is_called():
    base = {"engine/glue.py": "def shuffle(x):\n    return x\n"}
    after = {"engine/glue.py": "def shuffle(x):\n    return x[::-1]\n"}
    entry = {
        "path": "engine/glue.py",
        "function": "shuffle",
        "line": 1,
        "calls_per_step": 1,
        "host_share": 0.5,
    }
    assert score(base, after, None).signals[0].rule == "size"
    report = score(base, after, MapEvidence(step_map(entry)))  # no graph: the map alone says it
    found = signal(report, "map.per-step")
    assert found.weight == 80.0
    assert found.description == "runs once per verify step, 50% of its host time, measured at 5efac9d"
    assert report.level == "high"


def test_a_helper_the_allreduce_calls_is_reached_from_it_and_scores_hot():
    base = base_files()
    after = dict(
        base,
        **{
            STATE: sample.PARALLEL_STATE.replace(
                "        _TP_COMMUNICATOR = PyNcclCommunicator()\n",
                "        _TP_COMMUNICATOR = PyNcclCommunicator(group=None)\n",
            )
        },
    )
    without = score(base, after, None)
    report = score(base, after, evidence(base, ALL_REDUCE))
    found = signal(report, "map.reaches")
    assert found.function == "get_tp_communicator"
    assert found.weight == round(59.6 * stepmap_scoring.REACHED_SHARE, 1) == 44.7
    assert found.description == f"called from tensor_model_parallel_all_reduce(), which {MEASURED}"
    assert report.level == "high" and without.level != "high"


def test_a_function_reached_through_another_says_reached_from():
    files = {
        "a.py": "def top():\n    return mid()\n\ndef mid():\n    return leaf()\n\ndef leaf():\n    return 1\n"
    }
    entry = {"path": "a.py", "function": "top", "line": 1, "calls_per_step": 2, "host_share": 0.1}
    verdict = evidence(files, entry).judge("a.py", "leaf", ["    return 2"])
    assert verdict is not None
    assert verdict.rule == stepmap_scoring.REACHES and verdict.per_step
    assert verdict.reason.startswith("reached from top(), which runs 2 times per verify step, 10%")
    assert verdict.weight == 60.0


def test_a_change_in_a_hot_files_error_path_gets_set_up_weight():
    base = base_files(**{PYNCCL: PYNCCL_CHECKED})
    after = dict(base, **{PYNCCL: PYNCCL_CHECKED.replace("cannot all-reduce", "will not all-reduce")})
    plain = score(base, after, None)
    report = score(base, after, evidence(base, ALL_REDUCE, COMM_ALL_REDUCE))
    assert signal(plain, "path.pynccl").weight == 40
    lowered = signal(report, "path.pynccl")
    assert (lowered.weight, lowered.full_weight) == (20.0, 40)
    assert lowered.note == (
        "only code that does not run per step changed (_shape_error()): never runs per verify step: "
        "not on the map on main at 5efac9d, nor reached from a function on it"
    )
    assert not any(s.category == "per-step" for s in report.signals)
    assert report.score < plain.score and report.level != "high"


def test_a_hot_files_function_the_map_never_ran_lowers_its_function_and_token_rules():
    base = base_files(
        **{
            PYNCCL: PYNCCL_CHECKED.replace(
                "def _shape_error(tensor)", "def all_reduce_error(tensor)"
            ).replace("_shape_error(tensor))", "all_reduce_error(tensor))")
        }
    )
    after = dict(
        base,
        **{
            PYNCCL: base[PYNCCL].replace(
                '    return f"cannot', '    torch.cuda.synchronize()\n    return f"cannot'
            )
        },
    )
    report = score(base, after, evidence(base, ALL_REDUCE, COMM_ALL_REDUCE))
    collective = signal(report, "function.collective")
    assert (collective.function, collective.weight, collective.full_weight) == ("all_reduce_error", 12.5, 25)
    assert collective.note is not None and collective.note.startswith("never runs per verify step")
    sync = signal(report, "token.host-sync")
    assert (sync.weight, sync.note) == (7.5, collective.note)


def test_code_that_never_runs_per_step_in_a_file_without_path_rules_keeps_its_rules():
    base = {"engine/glue.py": "def fail(x):\n    return x\n\ndef run(x):\n    return x\n"}
    after = {"engine/glue.py": "def fail(x):\n    return x.item()\n\ndef run(x):\n    return x\n"}
    entry = {"path": "engine/glue.py", "function": "run", "line": 4, "calls_per_step": 1, "host_share": 0.5}
    ev = evidence(base, entry)
    assert ev.judge("engine/glue.py", "fail", []).rule == stepmap_scoring.OFF_STEP  # type: ignore[union-attr]
    assert score(base, after, ev).to_dict() == score(base, after, None).to_dict()


def test_a_decorator_of_a_mapped_function_reaches_it():
    files = {"ops.py": "def timed(fn):\n    return fn\n\n@timed\ndef forward(x):\n    return x\n"}
    entry = {"path": "ops.py", "function": "forward", "line": 4, "calls_per_step": 4, "host_share": 0.2}
    verdict = evidence(files, entry).judge("ops.py", "timed", ["    return fn"])
    assert verdict is not None and verdict.rule == stepmap_scoring.REACHES
    assert verdict.reason.startswith("decorates forward(), which runs 4 times per verify step, 20% of")


def test_a_module_constant_a_mapped_function_reads_counts_as_that_function():
    base = base_files(**{STATE: sample.PARALLEL_STATE_SLOW})
    after = dict(base, **{STATE: sample.PARALLEL_STATE_SLOW.replace("65536", "131072")})
    pad = {
        "path": STATE,
        "function": "tensor_model_parallel_all_reduce",
        "line": 30,
        "calls_per_step": 32,
        "host_share": 0.03,
    }
    report = score(base, after, evidence(base, pad))
    found = signal(report, "map.read-by")
    assert found.function is None and found.weight == 44.7
    assert found.description == (
        "`_GRAPH_TOKENS` is read by _pad_to_graph_size(), which is called from "
        f"tensor_model_parallel_all_reduce(), which {MEASURED}"
    )
    direct = {
        "path": STATE,
        "function": "_pad_to_graph_size",
        "line": 22,
        "calls_per_step": 32,
        "host_share": 0.03,
    }
    report = score(base, after, evidence(base, direct))
    assert (
        signal(report, "map.read-by").description
        == f"`_GRAPH_TOKENS` is read by _pad_to_graph_size(), which {MEASURED}"
    )


def test_a_constant_no_per_step_function_reads_is_off_step_and_a_new_one_is_not_judged():
    files = {STATE: "LIMIT = 4\nOTHER = 2\n\ndef run(x):\n    return x * OTHER\n"}
    entry = {"path": STATE, "function": "run", "line": 4, "calls_per_step": 1, "host_share": 0.5}
    ev = evidence(files, entry)
    off = ev.judge(STATE, None, ["LIMIT = 5"])
    assert off is not None and not off.per_step and off.weight == 0.0  # it adds no signal
    assert off.reason.startswith("`LIMIT` read by no function that runs per verify step: not on the map")
    assert ev.judge(STATE, None, ["NEW = 5"]) is None
    assert ev.judge(STATE, None, ["import os"]) is None
    assert ev.judge("elsewhere.py", None, ["LIMIT = 5"]) is None
    assert ev.judge(STATE, None, ["NEW = 1", "OTHER = 3"]).rule == stepmap_scoring.READ_BY  # type: ignore[union-attr]


def test_a_constant_of_another_file_counts_only_when_no_other_file_defines_it():
    files = {
        "a.py": "SIZE = 1\n",
        "b.py": "SIZE = 2\n",
        "c.py": "from a import SIZE\n\ndef run():\n    return SIZE\n",
    }
    entry = {"path": "c.py", "function": "run", "line": 3, "calls_per_step": 1, "host_share": 0.5}
    assert evidence(files, entry).judge("a.py", None, ["SIZE = 3"]).per_step is False  # type: ignore[union-attr]
    del files["b.py"]
    assert evidence(files, entry).judge("a.py", None, ["SIZE = 3"]).per_step is True  # type: ignore[union-attr]


def test_a_class_attribute_default_read_by_a_mapped_method_counts():
    files = {
        "cfg.py": "class Config:\n    max_batch: int = 32\n    name = 'x'\n",
        "run.py": "class Runner:\n    budget = 1\n    def step(self, c):\n        return c.max_batch + self.budget\n",
        "other.py": "class Other:\n    budget = 2\n",
    }
    entry = {"path": "run.py", "function": "Runner.step", "line": 3, "calls_per_step": 1, "host_share": 0.05}
    ev = evidence(files, entry)
    read = ev.judge("cfg.py", "Config", ["    max_batch: int = 64"])
    assert read is not None and read.rule == stepmap_scoring.READ_BY
    assert read.reason.startswith("`max_batch` is read by Runner.step(), which runs once")
    own = ev.judge("run.py", "Runner", ["    budget = 3"])  # two classes define it: the reader's own counts
    assert own is not None and own.rule == stepmap_scoring.READ_BY
    assert ev.judge("other.py", "Other", ["    budget = 3"]).per_step is False  # type: ignore[union-attr]
    assert ev.judge("cfg.py", "Config", ["    name = 'y'"]).per_step is False  # type: ignore[union-attr]
    assert ev.judge("cfg.py", "Config", ["    def helper(self):"]) is None
    assert ev.judge("cfg.py", "Missing", ["    max_batch = 1"]) is None
    # Two classes define `budget`: a reader in the same file but of neither class is not resolved.
    files["run.py"] += "\n\nclass Reporter:\n    def show(self, r):\n        return r.budget\n"
    show = {"path": "run.py", "function": "Reporter.show", "line": 9, "calls_per_step": 1, "host_share": 0.05}
    assert evidence(files, show).judge("run.py", "Runner", ["    budget = 3"]).per_step is False  # type: ignore[union-attr]
    assert evidence(files, entry).judge("run.py", "Runner", ["    budget = 3"]).per_step is True  # type: ignore[union-attr]


def test_without_the_bases_source_only_the_map_itself_judges():
    base = base_files(**{PYNCCL: PYNCCL_CHECKED})
    ev = evidence(base, ALL_REDUCE, graph=False)
    assert ev.judge(PYNCCL, "_shape_error", ["x"]) is None
    assert ev.judge(STATE, "get_tp_communicator", ["x"]) is None
    assert ev.judge(STATE, None, ["_TP_COMMUNICATOR = 1"]) is None
    assert ev.judge(STATE, "tensor_model_parallel_all_reduce", []).rule == stepmap_scoring.PER_STEP  # type: ignore[union-attr]


def test_a_function_new_in_the_change_or_in_an_unread_file_gets_no_verdict():
    ev = evidence(base_files(), ALL_REDUCE)
    assert ev.judge(STATE, "_pad_to_graph_size", ["    return x"]) is None
    assert ev.judge("mini_engine/sampling.py", "sample_top_k", ["    return x"]) is None


def test_two_mapped_functions_of_one_name_in_a_file_give_the_larger_share():
    entries = [
        {
            "path": "m.py",
            "function": f"{owner}.forward",
            "line": line,
            "calls_per_step": 1,
            "host_share": share,
        }
        for owner, line, share in (("A", 1, 0.001), ("B", 5, 0.1))
    ]
    verdict = MapEvidence(step_map(*entries)).judge("m.py", "forward", [])
    assert verdict is not None and verdict.weight == 80.0


def test_a_per_step_function_named_like_set_up_code_is_not_set_up_code_and_its_tokens_fire():
    base = {"engine/attention/backend.py": "def create_buffers(x):\n    return x\n"}
    after = {"engine/attention/backend.py": "def create_buffers(x):\n    return torch.empty_like(x)\n"}
    entry = {
        "path": "engine/attention/backend.py",
        "function": "create_buffers",
        "line": 1,
        "calls_per_step": 3,
        "host_share": 0.02,
    }
    plain = score(base, after, None)
    assert signal(plain, "path.attention").full_weight == 30  # lowered: set-up code by its name
    report = score(base, after, evidence(base, entry))
    attention = signal(report, "path.attention")
    assert (attention.weight, attention.full_weight) == (30, None)
    assert signal(report, "token.allocation").full_weight is None
    base = {"engine/glue.py": "def create_buffers(x):\n    return x\n"}
    after = {"engine/glue.py": "def create_buffers(x):\n    return torch.empty_like(x)\n"}
    entry["path"] = "engine/glue.py"
    assert "token.allocation" not in {s.rule for s in score(base, after, None).signals}  # `scope: hot`
    assert "token.allocation" in {s.rule for s in score(base, after, evidence(base, entry)).signals}


def test_off_step_code_beside_set_up_code_names_both_and_keeps_the_lower_share():
    base = {
        "mini_engine/distributed/pynccl.py": "def init_comm():\n    return 1\n\n\n\n\n\n\n"
        "def report(x):\n    return x\n"
    }
    after = {
        "mini_engine/distributed/pynccl.py": "def init_comm():\n    return 2\n\n\n\n\n\n\n"
        "def report(x):\n    return x + 1\n"
    }
    entry = {"path": PYNCCL, "function": "unrelated", "line": 1, "calls_per_step": 1, "host_share": 0.1}
    report = score(base, after, evidence(base, entry))
    lowered = signal(report, "path.pynccl")
    assert (lowered.weight, lowered.full_weight) == (20.0, 40)
    assert lowered.note is not None
    assert lowered.note.startswith("only code that does not run per step changed (init_comm(), report()): ")


def test_the_setup_share_comes_from_the_rules_and_without_one_nothing_is_lowered():
    named = ruleset.build(None, [], "generic").setups[0][0]
    verdict = stepmap_scoring.Verdict(stepmap_scoring.OFF_STEP, 0.0, "never runs")
    rule = verdict.setup(35.0, named)
    assert rule is not None and (rule.id, rule.kind, rule.weight, rule.description) == (
        stepmap_scoring.OFF_STEP,
        "setup",
        35.0,
        "never runs",
    )
    assert verdict.setup(None, named) is None
    assert stepmap_scoring.Verdict(stepmap_scoring.PER_STEP, 50.0, "runs").setup(35.0, named) is None
    for reached in (stepmap_scoring.REACHES, stepmap_scoring.READ_BY):
        assert stepmap_scoring.Verdict(reached, 50.0, "runs").setup(35.0, named) is named
        assert stepmap_scoring.Verdict(reached, 50.0, "runs").setup(35.0) is None


def test_a_constructor_only_the_call_graph_reaches_stays_set_up_code():
    base = base_files()
    after = dict(base, **{PYNCCL: sample.PYNCCL.replace("self.group = group", "self.group = group or None")})
    report = score(base, after, sample_evidence(base))
    reached = signal(report, "map.reaches")
    assert reached.function == "__init__" and reached.full_weight == 28.3 and reached.weight == 14.2
    assert reached.description.startswith(
        "called from get_tp_communicator(), which runs 8 times per one EAGLE-3"
    )
    assert reached.note == "in set-up code (__init__())"
    pynccl = signal(report, "path.pynccl")
    assert (pynccl.weight, pynccl.note) == (20.0, "only set-up code changed: __init__()")


def test_off_step_wording_counts_names_beyond_three_and_none_without_the_maps_rule():
    off = stepmap_scoring.Verdict(stepmap_scoring.OFF_STEP, 0.0, "why").setup(50.0)
    assert off is not None
    setups = [("a", off), (None, off), ("b", off), ("c", off), ("a", off)]
    assert map_rules.only_off_step(setups) == (
        "only code that does not run per step changed (a(), module-level code, b() and 1 more): why"
    )
    assert map_rules.only_off_step([(n, off) for n in "abc"]) == (
        "only code that does not run per step changed (a(), b(), c()): why"
    )
    plain = ruleset.build(None, [], "generic").setups[0][0]
    assert map_rules.only_off_step([("init", plain)]) is None


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("X = 1", ["X"]),
        ("    size: int = 8", ["size"]),
        ("TOTAL += 1", ["TOTAL"]),
        ("N //= 2", ["N"]),
        ("a == b", []),
        ("f(x=1)", []),
        ("def f(x=1):", []),
        ("x.y = 1", []),
        ("    x: int", []),
    ],
)
def test_assigned_names_of_changed_lines(line, names):
    assert stepmap_scoring.assigned_names([line]) == names


def test_assigned_names_are_unique_in_order():
    assert stepmap_scoring.assigned_names(["B = 1", "A = 2", "B = 3"]) == ["B", "A"]


@pytest.mark.parametrize(
    ("calls", "share", "words"),
    [
        (1, 0.5, "runs once per verify step, 50% of its host time"),
        (0.5, 0.0042, "runs 0.5 times per verify step, 0.42% of its host time"),
        (2, 0.123, "runs 2 times per verify step, 12.3% of its host time"),
        (1234.4, 1.0, "runs 1234.4 times per verify step, 100% of its host time"),
        (0.1234, 0.99, "runs 0.12 times per verify step, 99% of its host time"),
        (10_000_000, 0.000387, "runs 1e+07 times per verify step, 0.04% of its host time"),
    ],
)
def test_the_measurement_in_words(calls, share, words):
    entry = {"path": "a.py", "function": "f", "line": 1, "calls_per_step": calls, "host_share": share}
    verdict = MapEvidence(step_map(entry, commit="a" * 40)).judge("a.py", "f", [])
    assert verdict is not None and verdict.reason == f"{words}, measured at aaaaaaa"


@given(st.text(max_size=200), st.text(max_size=30), st.lists(st.text(max_size=80), max_size=5))
def test_judging_any_place_never_fails(source, function, lines):
    files = {"a.py": source, STATE: sample.PARALLEL_STATE}
    ev = evidence(files, ALL_REDUCE)
    verdict = ev.judge("a.py", function or None, lines)
    assert verdict is None or verdict.rule in (
        stepmap_scoring.PER_STEP,
        stepmap_scoring.REACHES,
        stepmap_scoring.READ_BY,
        stepmap_scoring.OFF_STEP,
    )


def test_the_sources_wanted_are_the_changed_python_files_then_the_maps_by_share_up_to_a_limit():
    entries = [
        {"path": path, "function": name, "line": 1, "calls_per_step": 1, "host_share": share}
        for path, name, share in (
            ("low.py", "f", 0.01),
            ("high.py", "g", 0.2),
            ("high.py", "h", 0.1),
            ("mid.py", "k", 0.05),
        )
    ]
    mapped = step_map(*entries)
    assert stepmap_scoring.sources_wanted(mapped, ["README.md", "mid.py", "new.py"], 10) == [
        "mid.py",
        "new.py",
        "high.py",
        "low.py",
    ]
    assert stepmap_scoring.sources_wanted(mapped, [], 2) == ["high.py", "mid.py"]


def test_evidence_builds_the_graph_from_what_the_reader_gives():
    files = base_files()
    asked: list[str] = []

    def read(path: str) -> str | None:
        asked.append(path)
        return files.get(path)

    built = stepmap_scoring.evidence(step_map(ALL_REDUCE), read, [STATE, "gone.py"], "main", 10)
    assert asked == [STATE, "gone.py"] and built.branch == "main"
    stepmap_scoring.evidence(step_map(ALL_REDUCE), read, ["a.py", "b.py", STATE], "main", 2)
    assert asked[2:] == ["a.py", "b.py"]
    assert built.graph is not None and {f.path for f in built.graph.functions} == {STATE}
    assert built.judge(STATE, "get_tp_communicator", []).rule == stepmap_scoring.REACHES  # type: ignore[union-attr]
    assert stepmap_scoring.evidence(step_map(ALL_REDUCE), None, [STATE], None, 10).graph is None


# The map the profiled pass of the sample's verify-step suite produced on CPU (two gloo ranks) at
# the commit before the slow one; `tests/examples/test_sample_map_scoring.py` makes one afresh.
SAMPLE_MAP = stepmap.parse(json.loads((Path(__file__).parent / "sample_step_map.json").read_text()))


def sample_evidence(files: dict[str, str], mapped: stepmap.StepMap = SAMPLE_MAP) -> MapEvidence:
    return MapEvidence(mapped, callgraph.build(files), "main")


def helper_change(mapped: stepmap.StepMap = SAMPLE_MAP) -> tuple[risk.RiskReport, risk.RiskReport]:
    """The sample's allreduce helper changed, scored without and with ``mapped``."""
    base = base_files()
    after = dict(
        base,
        **{
            STATE: sample.PARALLEL_STATE.replace(
                "        _TP_COMMUNICATOR = PyNcclCommunicator()\n",
                "        _TP_COMMUNICATOR = PyNcclCommunicator(group=None)\n",
            )
        },
    )
    return score(base, after, None), score(base, after, sample_evidence(base, mapped))


def error_path_change(mapped: stepmap.StepMap = SAMPLE_MAP) -> tuple[risk.RiskReport, risk.RiskReport]:
    """A message of the communicator's error path changed, scored without and with ``mapped``."""
    base = base_files(**{PYNCCL: PYNCCL_CHECKED})
    after = dict(base, **{PYNCCL: PYNCCL_CHECKED.replace("cannot all-reduce", "will not all-reduce")})
    return score(base, after, None), score(base, after, sample_evidence(base, mapped))


def test_with_the_samples_real_map_a_helper_the_allreduce_calls_scores_high():
    plain, mapped = helper_change()
    assert plain.level == "medium" and mapped.level == "high"
    found = signal(mapped, "map.per-step")
    assert found.function == "get_tp_communicator"
    assert found.description.startswith(
        "runs 8 times per one EAGLE-3 cycle (2 draft steps + verify), eager, "
        "0.04% of its host time, measured on main at 5efac9d"
    )


def test_with_the_samples_real_map_an_error_path_change_in_the_communicator_is_not_high():
    plain, mapped = error_path_change()
    assert plain.level == "medium" and mapped.level == "low"
    assert signal(mapped, "path.pynccl").full_weight == 40
