"""A per-step map from an engine's own torch-profiler trace: the trace's file names resolved to the
repository's paths, its calls named by the commit's source, the map built from its steps; and, on a
trace torch's profiler writes on the CPU for a model laid out like an engine, `perfbot score --map`."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.core import stepmap
from bot.runner import trace_map
from bot.runner.traces import TraceUnreadable
from tests.support.missing import importorskip

LAYERS = """\
import torch

_SCALE = None


def get_scale():
    global _SCALE
    if _SCALE is None:
        _SCALE = 0.5
    return _SCALE


def mlp(x, w):
    return torch.relu(x @ w) * get_scale()
"""
MODEL = """\
import torch

from .layers import mlp


class Model:
    def __init__(self, layers=2, hidden=16):
        self.weights = [torch.randn(hidden, hidden) for _ in range(layers)]

    def forward(self, x):
        for w in self.weights:
            x = mlp(x, w)
        return x
"""
PROFILE = """\
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from engine.model import Model

model, x = Model(), torch.randn(4, 16)
with profile(
    activities=[ProfilerActivity.CPU],
    with_stack=True,
    schedule=schedule(wait=0, warmup=1, active=3),
    on_trace_ready=lambda done: done.export_chrome_trace(sys.argv[1]),
) as profiler:
    for _ in range(4):
        model.forward(x)
        profiler.step()
"""


def event(name: str, ts: float, dur: float, cat: str = "python_function") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1, "args": {}}


def test_candidates_are_the_names_suffixes_longest_first_also_under_src():
    assert trace_map.candidates("/home/me/engine/layers.py") == [
        "home/me/engine/layers.py",
        "src/home/me/engine/layers.py",
        "me/engine/layers.py",
        "src/me/engine/layers.py",
        "engine/layers.py",
        "src/engine/layers.py",
        "layers.py",
        "src/layers.py",
    ]
    assert trace_map.candidates("torch/site-packages/x.py") == []
    assert trace_map.candidates("../engine/x.py") == []


def test_resolved_takes_the_longest_candidate_the_commit_has():
    have = {"engine/layers.py", "layers.py", "src/pkg/ops.py"}
    found = trace_map.resolved(
        ["/abs/engine/layers.py", "pkg/ops.py", "nowhere.py"], lambda paths: [p for p in paths if p in have]
    )
    assert found == {"/abs/engine/layers.py": "engine/layers.py", "pkg/ops.py": "src/pkg/ops.py"}


def test_annotate_names_calls_by_the_sources_definitions_and_build_makes_the_map():
    trace = {
        "traceEvents": [
            event("ProfilerStep#1", 0, 100, cat="user_annotation"),
            event("engine/model.py(10): forward", 1, 90),
            event("engine/layers.py(13): mlp", 2, 40),
            event("engine/layers.py(13): mlp", 50, 30),
            event("engine/layers.py(6): get_scale", 51, 1),
            event("engine/layers.py(99): gone", 60, 1),
            event("torch/nn/modules/module.py(1): _call_impl", 3, 5),
            event("aten::mm", 4, 20, cat="cpu_op"),
        ]
    }
    sources = {"engine/model.py": MODEL, "engine/layers.py": LAYERS}
    resolve = {"engine/model.py": "engine/model.py", "engine/layers.py": "engine/layers.py"}
    assert trace_map.file_names(trace) == [
        "engine/model.py",
        "engine/layers.py",
        "torch/nn/modules/module.py",
    ]
    mapped = trace_map.build(trace, resolve, sources.get, "a" * 40, "profiled step")
    entries = {f.function: (f.calls_per_step, round(f.host_share, 2), f.line) for f in mapped.functions}
    assert entries == {"Model.forward": (1.0, 0.9, 10), "mlp": (2.0, 0.7, 13), "get_scale": (1.0, 0.01, 6)}
    assert mapped.commit == "a" * 40 and mapped.steps == 1


def test_a_trace_without_the_repositorys_calls_makes_no_map():
    trace = {
        "traceEvents": [event("ProfilerStep#1", 0, 10, cat="user_annotation"), event("x.py(1): f", 1, 1)]
    }
    with pytest.raises(
        stepmap.StepMapError, match="no Python call of the trace is a function of the repository"
    ):
        trace_map.build(trace, {}, lambda path: None, "a" * 40, "step")


@pytest.fixture
def engine(tmp_path):
    repo = tmp_path / "engine-repo"
    (repo / "engine").mkdir(parents=True)
    (repo / "engine" / "__init__.py").write_text("")
    (repo / "engine" / "layers.py").write_text(LAYERS)
    (repo / "engine" / "model.py").write_text(MODEL)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "engine"], check=True)
    return repo


@pytest.mark.slow
def test_score_with_a_map_made_from_a_cpu_torch_profiler_trace(engine, tmp_path, capsys):
    importorskip("torch")
    (tmp_path / "profile.py").write_text(PROFILE)
    trace = tmp_path / "trace.json"
    env = {**os.environ, "PYTHONPATH": str(engine)}
    subprocess.run(
        [sys.executable, str(tmp_path / "profile.py"), str(trace)], env=env, check=True, timeout=300
    )
    diff = tmp_path / "d.diff"
    diff.write_text(
        "diff --git a/engine/layers.py b/engine/layers.py\n--- a/engine/layers.py\n+++ b/engine/layers.py\n"
        "@@ -13,2 +13,2 @@ def get_scale():\n def mlp(x, w):\n-    return torch.relu(x @ w) * get_scale()\n"
        "+    return torch.relu(x @ w).float() * get_scale()\n"
    )
    code = main(["score", str(diff), "--repo", str(engine), "--map", str(trace), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert any(
        r.startswith("runs 2 times per profiled step") and "[map.per-step" in r for r in data["reasons"]
    )
    assert main(["score", str(diff), "--map", str(trace)]) == 2
    assert "--repo must name the repository checked out at the traced commit" in capsys.readouterr().err


def test_is_trace_only_for_an_object_with_a_list_of_events():
    assert trace_map.is_trace({"traceEvents": []})
    assert not trace_map.is_trace({"traceEvents": {}})
    assert not trace_map.is_trace([{"traceEvents": []}])
    assert not trace_map.is_trace({"schema": 1})


def test_annotate_counts_the_calls_it_named_and_skips_what_is_no_call():
    trace = {
        "traceEvents": [
            "not an event",
            event("engine/layers.py(13): mlp", 2, 40),
            event("engine/layers.py(13): mlp", 50, 30),
            event("engine/layers.py(13): mlp", 90, 1, cat="cpu_op"),
            event("engine/layers.py: mlp", 95, 1),
        ]
    }
    assert trace_map.file_names(trace) == ["engine/layers.py"]
    assert (
        trace_map.annotate(trace, {"engine/layers.py": "engine/layers.py"}, {"engine/layers.py": LAYERS}.get)
        == 2
    )
    named = [e["args"].get("perfbot.function") for e in trace["traceEvents"][1:]]
    assert named[:2] == [{"path": "engine/layers.py", "line": 13, "function": "mlp"}] * 2
    assert named[2:] == [None, None]


ENGINE = Path(__file__).resolve().parent / "trace_engine"


def engine_trace() -> dict:
    return json.loads(gzip.decompress((ENGINE / "trace.json.gz").read_bytes()))


def test_traced_names_the_calls_by_the_worktrees_files_as_a_profiled_pass_would():
    # A suite's profiled pass: the trace the engine's own profiler wrote, the side's worktree.
    found = trace_map.traced(engine_trace(), ENGINE, "trace.json.gz", "decode step")
    mapped = found.step_map("b" * 40, "server")
    assert mapped is not None and found.profile.steps == 3
    assert {(f.path, f.function) for f in mapped.functions} == {
        ("engine/scheduler.py", "Scheduler.step"),
        ("engine/model_runner.py", "ModelRunner.forward"),
        ("engine/layers/linear.py", "RowParallelLinear.forward"),
        ("engine/utils/tracing.py", "traced.<locals>.decorator.<locals>.inner"),
        ("engine/distributed/parallel_state.py", "tensor_model_parallel_all_reduce"),
        ("engine/distributed/parallel_state.py", "get_tp_group"),
    }
    assert (mapped.suite, mapped.step, mapped.commit) == ("server", "decode step", "b" * 40)


def test_traced_without_the_repositorys_calls_gives_the_profile_and_no_map(tmp_path):
    found = trace_map.traced(engine_trace(), tmp_path, "trace.json.gz", "step")
    assert found.profile.steps == 3 and found.step_map("b" * 40, "server") is None


def test_traced_leaves_a_trace_named_already_as_it_is(tmp_path):
    # perfbot's own workloads name their calls (and the lines that made them) themselves.
    data = {
        "traceEvents": [
            event("ProfilerStep#1", 0, 100, cat="user_annotation"),
            {
                # a file the worktree has, at a function's line: named again, it would be Scheduler.step
                **event("engine/scheduler.py(10): step", 2, 40),
                "args": {"perfbot.function": {"path": "pkg/own.py", "line": 3, "function": "own"}},
            },
            event("aten::mm", 4, 20, cat="cpu_op"),
        ]
    }
    mapped = trace_map.traced(data, ENGINE, "t", "step").step_map("b" * 40, "s")
    assert mapped is not None and [(f.path, f.function) for f in mapped.functions] == [("pkg/own.py", "own")]


def test_the_worktrees_files_are_only_those_inside_it(tmp_path):
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def a():\n    pass\n")
    (tmp_path / "outside.py").write_text("def secret():\n    pass\n")
    (root / "pkg" / "link.py").symlink_to(tmp_path / "outside.py")
    (root / "pkg" / "inner.py").symlink_to(root / "pkg" / "a.py")
    exists, read = trace_map.worktree(root)
    assert exists(["pkg/a.py", "pkg/link.py", "pkg/inner.py", "pkg", "pkg/none.py"]) == [
        "pkg/a.py",
        "pkg/inner.py",
    ]
    assert read("pkg/a.py") == "def a():\n    pass\n"
    assert read("pkg/link.py") is None and read("pkg") is None and read("pkg/none.py") is None


def test_read_takes_a_plain_or_gzipped_trace_under_the_cap(tmp_path, monkeypatch):
    plain = tmp_path / "t.json"
    data = {"traceEvents": [event("x.py(1): f", 0, 1)] * 50}
    plain.write_text(json.dumps(data))
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert trace_map.read(plain) == trace_map.read(packed) == data
    monkeypatch.setattr(trace_map, "MAX_TRACE_BYTES", len(plain.read_bytes()))
    assert trace_map.read(plain) == trace_map.read(packed)
    monkeypatch.setattr(trace_map, "MAX_TRACE_BYTES", len(plain.read_bytes()) - 1)
    for path in (plain, packed):
        with pytest.raises(TraceUnreadable, match=r"^t\.json(\.gz)?: larger than 0 MiB$"):
            trace_map.read(path)


def test_the_cap_is_said_in_mib(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_map, "MAX_TRACE_BYTES", 3 * 2**20)
    big = tmp_path / "big.json"
    big.write_bytes(b'{"traceEvents": []}' + b" " * (3 * 2**20))
    with pytest.raises(TraceUnreadable, match=r"^big\.json: larger than 3 MiB$"):
        trace_map.read(big)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{", "bad: not a JSON trace"),
        (b"\x1f\x8b\x08broken", "bad: not a gzip file"),
        (b"[" * 100_000 + b"]" * 100_000, "bad: not a JSON trace"),
    ],
)
def test_read_says_in_one_line_what_is_no_trace(tmp_path, content, message):
    bad = tmp_path / "bad"
    bad.write_bytes(content)
    with pytest.raises(TraceUnreadable, match=f"^{message}"):
        trace_map.read(bad)
    with pytest.raises(TraceUnreadable, match="^none.json: No such file"):
        trace_map.read(tmp_path / "none.json")


@pytest.mark.slow
def test_a_trace_torch_writes_afresh_maps_as_the_kept_one(tmp_path):
    importorskip("torch")
    fresh = tmp_path / "trace.json.gz"
    subprocess.run(
        [sys.executable, str(ENGINE / "profile_engine.py"), str(fresh)],
        env={**os.environ, "PYTHONPATH": str(ENGINE)},
        check=True,
        timeout=300,
        capture_output=True,
    )
    kept = trace_map.traced(engine_trace(), ENGINE, "kept", "step").step_map("b" * 40, "s")
    made = trace_map.traced(trace_map.read(fresh), ENGINE, "fresh", "step").step_map("b" * 40, "s")
    assert kept is not None and made is not None
    assert {(f.path, f.function, f.calls_per_step) for f in made.functions} == {
        (f.path, f.function, f.calls_per_step) for f in kept.functions
    }


def test_read_traced_reads_a_trace_file_against_the_worktree_or_says_why_not(tmp_path):
    found = trace_map.read_traced(ENGINE / "trace.json.gz", ENGINE, "decode step")
    mapped = found.step_map("b" * 40, "server")
    assert mapped is not None and len(mapped.functions) == 6 and mapped.step == "decode step"
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}')
    with pytest.raises(TraceUnreadable, match="^empty.json: "):
        trace_map.read_traced(empty, ENGINE, "step")
    listed = tmp_path / "list.json"
    listed.write_text("[]")
    with pytest.raises(TraceUnreadable, match="^list.json: "):
        trace_map.read_traced(listed, ENGINE, "step")
