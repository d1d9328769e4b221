"""A per-step map from an engine's own torch-profiler trace: the trace's file names resolved to the
repository's paths, its calls named by the commit's source, the map built from its steps; and, on a
trace torch's profiler writes on the CPU for a model laid out like an engine, `perfbot score --map`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bot.cli.main import main
from bot.core import stepmap
from bot.runner import trace_map
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
