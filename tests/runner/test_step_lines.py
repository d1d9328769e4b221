"""The lines a profiled pass records in its measured steps: recorded from real runs of a module of
the repository, kept compact and bounded, read back into the per-step map, and judged by scoring."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from bot.core import stepmap
from bot.core.risk import callgraph
from bot.core.risk import diff as diffs
from bot.runner import profiling, step_lines
from bot.runner.suites.base import PROFILED_PASS, RoundContext
from tests.core.risk.test_stepmap_scoring import change, score

# A getter made on first use and a function every step calls, laid out as an engine's are.
STATE = """\
_COMM = None


def get_comm():
    global _COMM
    if _COMM is None:
        _COMM = {"made": True}
    return _COMM


def all_reduce(x):
    if x < 0:
        raise ValueError("negative")
    return get_comm()["made"] and x
"""
PATH = "engine/state.py"


def load(root: Path, name: str = "state"):
    (root / "engine").mkdir(parents=True, exist_ok=True)
    (root / PATH).write_text(STATE)
    spec = importlib.util.spec_from_file_location(f"_perfbot_test_{name}", root / PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded(tmp_path: Path) -> dict[str, list[list[int]]]:
    module = load(tmp_path / "repo")
    module.all_reduce(1)  # the warm-up makes the communicator
    with step_lines.LineRecorder([tmp_path / "repo"]) as recorder:
        for _ in range(8):
            module.all_reduce(2)
    return recorder.ranges()


def test_the_recorder_keeps_the_lines_that_ran_in_the_steps_and_not_the_warm_ups(tmp_path):
    assert recorded(tmp_path) == {PATH: [[6, 6], [8, 8], [12, 12], [14, 14]]}


def test_the_recorder_leaves_out_files_outside_the_repository_and_restores_the_tracer(tmp_path):
    module = load(tmp_path / "elsewhere")
    before = sys.gettrace()
    with step_lines.LineRecorder([tmp_path / "repo"]) as recorder:
        module.all_reduce(2)
    assert recorder.ranges() == {}
    assert sys.gettrace() is before


def test_compact_makes_sorted_ranges_of_consecutive_lines():
    assert step_lines.compact([5, 3, 4, 9, 9, 1]) == [[1, 1], [3, 5], [9, 9]]
    assert step_lines.compact([]) == []


def test_past_the_cap_whole_files_are_left_out_the_smallest_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(step_lines, "MAX_RANGES", 3)
    recorder = step_lines.LineRecorder([tmp_path])
    recorder.ran = {"big.py": {1, 3, 5}, "small.py": {2}, "mid.py": {1, 3}}
    assert recorder.ranges() == {"mid.py": [[1, 1], [3, 3]], "small.py": [[2, 2]]}
    recorder.ran = {"a.py": {1, 3, 5}}
    assert recorder.ranges() == {"a.py": [[1, 1], [3, 3], [5, 5]]}


def test_the_record_is_written_read_back_and_attached_to_the_map(tmp_path):
    recorder = step_lines.LineRecorder([tmp_path])
    recorder.ran = {PATH: {6, 8}}
    recorder.write(tmp_path / "pass")
    assert step_lines.read(tmp_path / "pass") == {PATH: [[6, 6], [8, 8]]}
    assert step_lines.read(tmp_path / "none") is None
    mapped = stepmap.parse(map_data())
    context = RoundContext(tmp_path, tmp_path / "pass", "base", PROFILED_PASS)
    attached = profiling.with_recorded_lines(mapped, context)
    assert attached.lines == {PATH: ((6, 6), (8, 8))}
    assert (
        attached.ran(PATH, 8) is True and attached.ran(PATH, 7) is False and attached.ran("x.py", 1) is None
    )


def test_an_unfit_record_leaves_the_map_without_lines(tmp_path):
    mapped = stepmap.parse(map_data())
    context = RoundContext(tmp_path, tmp_path / "pass", "base", PROFILED_PASS)
    (tmp_path / "pass").mkdir()
    for bad in ('{"lines": {"/etc/passwd": [[1, 2]]}}', '{"lines": {"a.py": [[3, 1]]}}', "not json", "[]"):
        (tmp_path / "pass" / step_lines.FILE).write_text(bad)
        assert profiling.with_recorded_lines(mapped, context) == mapped
        assert profiling.with_recorded_lines(mapped, context).lines is None


def map_data(**extra: object) -> dict:
    return {
        "schema": 1,
        "commit": "5efac9d9d419c62e9688771b6923a7429c927fde",
        "suite": "verify-step",
        "step": "verify step",
        "steps": 8,
        "source": "torch.profiler",
        "functions": [
            {"path": PATH, "function": "get_comm", "line": 4, "calls_per_step": 1, "host_share": 0.0002},
            {"path": PATH, "function": "all_reduce", "line": 11, "calls_per_step": 1, "host_share": 0.05},
        ],
        "kernels": [],
        **extra,
    }


def test_a_map_with_recorded_lines_judges_a_raise_in_the_first_call_branch_cold_and_a_step_change_per_step(
    tmp_path,
):
    from bot.core.risk.stepmap_scoring import MapEvidence

    lines = recorded(tmp_path)
    mapped = stepmap.parse(map_data(lines=lines))
    base = {PATH: STATE}

    def evidence(after: dict[str, str]) -> MapEvidence:
        return MapEvidence(mapped, callgraph.build(base), "main", base, diffs.parse(change(base, after)))

    decoy = {
        PATH: STATE.replace(
            '        _COMM = {"made": True}\n',
            '        _COMM = {"made": True}\n        raise RuntimeError("once")\n',
        )
    }
    per_step = {PATH: STATE.replace("    return _COMM\n", "    return dict(_COMM)\n")}
    without_lines = score(base, decoy, MapEvidence(mapped)).signals
    assert any(s.rule == "map.per-step" and s.function == "get_comm" for s in without_lines)
    assert not any(s.category == "per-step" for s in score(base, decoy, evidence(decoy)).signals)
    judged = score(base, per_step, evidence(per_step))
    assert any(s.rule == "map.per-step" and s.function == "get_comm" for s in judged.signals)
    error = {PATH: STATE.replace('raise ValueError("negative")', 'raise ValueError("below zero")')}
    assert not any(s.category == "per-step" for s in score(base, error, evidence(error)).signals)
    assert json.loads(json.dumps(mapped.to_dict()))["lines"] == lines


def test_the_recorders_cap_is_the_maps():
    assert step_lines.MAX_RANGES == stepmap.MAX_LINE_RANGES


def test_the_record_is_written_into_a_new_folder_and_over_an_old_one(tmp_path):
    recorder = step_lines.LineRecorder([tmp_path])
    recorder.ran = {PATH: {1}}
    recorder.write(tmp_path / "a" / "b")
    recorder.ran = {PATH: {2}}
    recorder.write(tmp_path / "a" / "b")
    assert step_lines.read(tmp_path / "a" / "b") == {PATH: [[2, 2]]}


def test_only_existing_absolute_files_under_the_roots_are_the_repositorys(tmp_path, monkeypatch):
    load(tmp_path / "repo")
    recorder = step_lines.LineRecorder([tmp_path / "repo"])
    assert recorder._path(str(tmp_path / "repo" / PATH)) == PATH
    monkeypatch.chdir(tmp_path / "repo")
    assert recorder._path(PATH) is None  # a relative name depends on the working directory: not taken
    assert recorder._path(str(tmp_path / "repo" / "engine" / "gone.py")) is None
    assert recorder._path("<string>") is None
