"""The verify-step benchmark runs on CPU (gloo, tiny shapes) and reports every CPU metric."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.missing import importorskip

importorskip("torch")

from bot.runner.suites import verify_step_workload  # noqa: E402

ONE_RANK_METRICS = {
    "verify_eager_ms",
    "draft_ms",
    "cycle_ms",
    "tok_s",
    "decode_ms",
    "baseline_tok_s",
    "spec_speedup",
}
# The allreduce is timed only where there is something to exchange.
CPU_METRICS = ONE_RANK_METRICS | {"allreduce_verify_us", "allreduce_draft_us"}


def bench(tmp_path, *args):
    out = tmp_path / "out.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot.runner.suites.verify_step_workload",
            "--out",
            str(out),
            "--device",
            "cpu",
            "--iters",
            "3",
            "--warmup-iters",
            "1",
            "--timeout",
            "120",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    return done, out


def test_one_rank_on_cpu_reports_medians_and_the_derived_cycle(tmp_path):
    done, out = bench(tmp_path, "--world-size", "1", "--accept-length", "2.0", "--num-steps", "3")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    metrics = report["metrics"]
    assert set(metrics) == ONE_RANK_METRICS
    assert all(value > 0 for value in metrics.values())
    assert metrics["cycle_ms"] == pytest.approx(3 * metrics["draft_ms"] + metrics["verify_eager_ms"])
    assert metrics["tok_s"] == pytest.approx(1000 * 2.0 / metrics["cycle_ms"])
    # Without speculation: one token per sequence per plain decode step of the same model.
    assert metrics["baseline_tok_s"] == pytest.approx(1000 / metrics["decode_ms"])
    assert metrics["spec_speedup"] == pytest.approx(metrics["tok_s"] / metrics["baseline_tok_s"])
    assert {"decode_ms", "spec_speedup"} <= set(report["spread"])
    assert (report["world_size"], report["device"], report["shape"]["hidden"]) == (1, "cpu", 64)


def test_an_allreduce_that_cannot_be_imported_fails_the_run(tmp_path):
    done, out = bench(tmp_path, "--world-size", "1", "--allreduce", "no_such_module:all_reduce")
    assert done.returncode != 0
    assert "worker exit codes" in done.stderr
    assert not out.exists()


@pytest.mark.parametrize("args", [["--heads", "6", "--kv-heads", "4"], ["--topk", "9", "--experts", "8"]])
def test_impossible_shapes_are_refused(args):
    parsed = verify_step_workload.build_parser().parse_args(["--out", "x", *args])
    with pytest.raises(SystemExit):
        verify_step_workload.resolve_shape(parsed, "cpu")


def test_a_dimension_that_does_not_split_over_the_ranks_is_refused():
    with pytest.raises(SystemExit, match="does not split over 3 ranks"):
        verify_step_workload.split(64, 3)


def test_the_shape_defaults_follow_the_device():
    parsed = verify_step_workload.build_parser().parse_args(["--out", "x", "--layers", "3"])
    assert verify_step_workload.resolve_shape(parsed, "cuda").hidden == 7168
    assert verify_step_workload.resolve_shape(parsed, "cpu").hidden == 64
    assert verify_step_workload.resolve_shape(parsed, "cpu").layers == 3


def test_when_one_rank_dies_the_others_are_ended_instead_of_waiting_for_it(tmp_path):
    hook = tmp_path / "hooks"
    hook.mkdir()
    (hook / "half_broken.py").write_text(
        "import os\nimport torch.distributed as dist\n"
        "if os.environ['RANK'] == '1':\n    raise SystemExit(3)\n"
        "def all_reduce(tensor):\n    dist.all_reduce(tensor)\n    return tensor\n"
    )
    done, out = bench(
        tmp_path, "--world-size", "2", "--pythonpath", str(hook), "--allreduce", "half_broken:all_reduce"
    )
    assert done.returncode != 0
    assert "worker exit codes" in done.stderr and "timed out" not in done.stderr
    assert not out.exists()


def test_the_cycle_follows_the_engine_s_mode_and_every_metric_carries_its_standard_error(tmp_path):
    done, out = bench(tmp_path, "--world-size", "2", "--accept-length", "2.0")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["graph"] == "eager"  # no CUDA graphs on CPU: the engine's default cannot run there
    assert set(report["spread"]) == set(report["metrics"]) == CPU_METRICS
    assert all(s["se"] >= 0 and s["calls"] >= 3 for s in report["spread"].values())
    # The allreduce: 10 blocks of back-to-back calls, at least 10 calls each.
    assert report["spread"]["allreduce_verify_us"]["calls"] >= 100
    cycle, tok_s = report["spread"]["cycle_ms"], report["spread"]["tok_s"]
    assert tok_s["se"] / report["metrics"]["tok_s"] == pytest.approx(
        cycle["se"] / report["metrics"]["cycle_ms"]
    )


def test_a_graph_mode_that_cannot_run_on_the_device_is_refused_before_any_rank_starts(tmp_path):
    done, out = bench(tmp_path, "--world-size", "1", "--graph", "piecewise")
    assert (
        done.returncode != 0 and "--graph piecewise: CUDA graphs need a GPU; use --graph eager" in done.stderr
    )
    assert "worker exit codes" not in done.stderr and not out.exists()


def test_the_suite_declares_the_mode_its_round_ran_in_and_keeps_the_spread(tmp_path):
    from bot.core.config.suite_kinds.verify_step import VerifyStepSuite
    from bot.runner.suites.base import RoundContext, RoundId
    from bot.runner.suites.verify_step import RESULT_FILE, VerifyStepBench

    suite = VerifyStepBench("verify-step", VerifyStepSuite(kind="verify-step", graph="piecewise"))
    context = RoundContext(tmp_path, tmp_path, "base", RoundId("counted", 0))
    assert suite.round_commands(context)[0].argv[-2:] == ("--graph", "piecewise")
    metrics = {"cycle_ms": 9.7, "tok_s": 185.0, "draft_ms": 0.27, "verify_piecewise_ms": 9.2}
    (tmp_path / RESULT_FILE).write_text(
        json.dumps(
            {
                "metrics": metrics,
                "graph": "piecewise",
                "spread": {name: {"se": 0.01, "calls": 100} for name in (*metrics, "ignored_ms")},
            }
        )
    )
    measured = suite.parse(context, [])
    assert measured.values == metrics
    assert {n: d.mode for n, d in measured.declarations.items()} == dict.fromkeys(
        ("cycle_ms", "tok_s"), "piecewise"
    )
    assert measured.declarations["cycle_ms"].role == "headline"
    assert set(measured.spread) == set(metrics)


def test_a_graph_mode_without_cuda_graphs_is_a_config_error():
    from pydantic import ValidationError

    from bot.core.config.suite_kinds.verify_step import VerifyStepSuite

    with pytest.raises(ValidationError, match="graph: full needs CUDA graphs"):
        VerifyStepSuite(kind="verify-step", graph="full", cuda_graphs=False)
    assert VerifyStepSuite(kind="verify-step", graph="eager", cuda_graphs=False).graph == "eager"


def test_the_profiled_pass_times_nothing_and_writes_a_trace_of_its_cycles(tmp_path):
    from bot.runner import traces

    trace = tmp_path / "profile" / "trace.json"
    done, out = bench(tmp_path, "--world-size", "1", "--profile", str(trace), "--profile-steps", "3")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert "metrics" not in report and report["profiled"]["steps"] == 3
    read = traces.read(trace, report["profiled"]["what"])
    assert (read.device, read.steps) == ("cpu", 3)
    assert {"gemm", "attention", "communication"} <= {k.family for k in read.kernels}


def test_only_the_engine_s_mode_is_timed_unless_more_are_asked_for():
    parsed = verify_step_workload.build_parser().parse_args(["--out", "x"])
    assert verify_step_workload.resolve_modes(parsed, "cuda", "piecewise") == ("piecewise",)
    parsed = verify_step_workload.build_parser().parse_args(
        ["--out", "x", "--verify-modes", "piecewise,full,eager"]
    )
    assert verify_step_workload.resolve_modes(parsed, "cuda", "piecewise") == ("eager", "full", "piecewise")
    with pytest.raises(SystemExit, match="CUDA graphs do not run here"):
        verify_step_workload.resolve_modes(parsed, "cpu", "eager")
    with pytest.raises(SystemExit, match="choose from"):
        verify_step_workload.resolve_modes(
            verify_step_workload.build_parser().parse_args(["--out", "x", "--verify-modes", "fast"]),
            "cuda",
            "full",
        )


def test_a_precise_pass_stops_before_its_cap_and_a_zero_target_times_every_call(tmp_path):
    done, out = bench(tmp_path, "--world-size", "1", "--iters", "200", "--target-se", "0.5")
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["spread"]["verify_eager_ms"]["calls"] == 10
    done, out = bench(tmp_path, "--world-size", "1", "--iters", "12", "--target-se", "0")
    assert json.loads(out.read_text())["spread"]["verify_eager_ms"]["calls"] == 12


def test_a_serving_worker_runs_a_round_per_request_until_its_input_ends(tmp_path):
    requests = "".join(json.dumps({"out": str(tmp_path / f"round-{n}.json")}) + "\n" for n in range(2))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot.runner.suites.verify_step_workload",
            "--out",
            "unused",
            "--serve",
            "--device",
            "cpu",
            "--world-size",
            "2",
            "--iters",
            "3",
            "--warmup-iters",
            "1",
        ],
        input=requests + "stop\n",
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    rounds = [json.loads((tmp_path / f"round-{n}.json").read_text()) for n in range(2)]
    assert all(r["process"] == "worker" and set(r["metrics"]) == CPU_METRICS for r in rounds)


def test_the_configured_speculation_floor_is_recorded_for_the_comparison():
    from pydantic import ValidationError

    from bot.core.config.suite_kinds.verify_step import VerifyStepSuite
    from bot.runner.suites.verify_step import VerifyStepBench

    with_floor = VerifyStepBench("verify-step", VerifyStepSuite(kind="verify-step", speculation_floor=1.2))
    assert with_floor.judging() == {"speculation_floor": 1.2}
    assert VerifyStepBench("verify-step", VerifyStepSuite(kind="verify-step")).judging() == {}
    for bad in (0, -1.0, "fast"):
        with pytest.raises(ValidationError, match="speculation_floor"):
            VerifyStepSuite(kind="verify-step", speculation_floor=bad)


def test_repository_frames_are_relative_paths_with_qualified_names(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text(
        "import functools\n\n\nclass Comm:\n    @functools.cache\n    def all_reduce(self, x):\n"
        "        def inner():\n            return x\n        return inner()\n\n\ndef top():\n    return 1\n"
    )
    installed = tmp_path / "venv" / "lib" / "site-packages"
    (installed / "pkg").mkdir(parents=True)
    (installed / "pkg" / "other.py").write_text("def f():\n    pass\n")
    monkeypatch.setattr(sys, "path", [str(repo), str(installed), *sys.path])
    frames = verify_step_workload.RepositoryFrames([str(repo)])
    # A called function is named by its first line (the decorator's) or its def line.
    assert frames.frame("pkg/mod.py", 5, definition=True) == {
        "path": "pkg/mod.py",
        "line": 6,
        "function": "Comm.all_reduce",
    }
    assert frames.frame("pkg/mod.py", 12, definition=True)["function"] == "top"
    assert frames.frame("pkg/mod.py", 8, definition=False) == {
        "path": "pkg/mod.py",
        "line": 8,
        "function": "Comm.all_reduce.<locals>.inner",
    }
    assert frames.frame("pkg/mod.py", 1, definition=False)["function"] == "<module>"
    assert frames.frame("pkg/other.py", 1, definition=True) is None  # installed, not the repository's
    assert frames.frame("torch/nn/functional.py", 10, definition=False) is None
    assert frames.frame("<built-in method zeros>", 0, definition=False) is None


@pytest.mark.slow
def test_the_profiled_pass_names_the_repository_s_frames_in_its_trace(tmp_path):
    from bot.runner import traces

    repo = tmp_path / "repo"
    (repo / "engine").mkdir(parents=True)
    (repo / "engine" / "__init__.py").write_text("")
    (repo / "engine" / "comm.py").write_text(
        "import torch.distributed as dist\n\n\ndef all_reduce(tensor):\n    out = tensor.clone()\n"
        "    dist.all_reduce(out)\n    return out\n"
    )
    trace = tmp_path / "profile" / "trace.json"
    done, out = bench(
        tmp_path,
        "--world-size",
        "2",
        "--pythonpath",
        str(repo),
        "--allreduce",
        "engine.comm:all_reduce",
        "--profile",
        str(trace),
        "--profile-steps",
        "2",
    )
    assert done.returncode == 0, done.stderr
    read = traces.read_traced(trace, "cycle")
    [clone] = [k for k in read.profile.kernels if k.name == "aten::clone"]
    assert [(s.path, s.line, s.function) for s in clone.sites] == [("engine/comm.py", 5, "all_reduce")]
    built = read.step_map("a" * 40, "verify-step")
    assert built.function_at("engine/comm.py", "all_reduce").line == 4


def test_a_profiler_spare_sets_its_profiler_up_without_importing_torch_s_compiler(tmp_path):
    """PyTorch's profiler asks ``hasattr(torch, "_inductor")`` as it starts, which imports
    torch.compile's compiler (over a second of the spare's start, for a setting the engine, which
    never imported it, cannot be using): the spare's profiler session and its profiled pass leave
    it unimported, and the pass still writes its trace."""
    from bot.runner import traces

    ready, trace, out = tmp_path / "ready.json", tmp_path / "profile" / "trace.json", tmp_path / "pass.json"
    request = json.dumps({"out": str(out), "profile": str(trace)})
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "bot.runner.suites.verify_step_workload",
            "--out",
            "unused",
            "--serve",
            "--ready",
            str(ready),
            "--cold",
            "--warm-profiler",
            "--device",
            "cpu",
            "--world-size",
            "1",
            "--profile-steps",
            "2",
        ],
        input=request + "\nstop\n",
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "import time:" in line
    }
    assert "torch" in imported and "torch._inductor" not in imported and "torch._dynamo" not in imported
    assert json.loads(ready.read_text())["seconds"]["profiler"] >= 0
    assert json.loads(out.read_text())["profiled"]["steps"] == 2
    assert traces.read(trace, "cycle").steps == 2


@pytest.mark.parametrize(
    ("imported", "environment", "hidden"),
    [(False, {}, True), (True, {}, False), (False, {"TORCHINDUCTOR_CUDAGRAPHS": "1"}, False)],
)
def test_the_compiler_is_hidden_from_the_profiler_s_start_only_where_nothing_imported_it(
    monkeypatch, imported, environment, hidden
):
    import types

    from bot.runner.suites import verify_step_workload

    torch = types.SimpleNamespace(_lazy_modules={"_dynamo", "_inductor"})
    if imported:
        monkeypatch.setitem(sys.modules, "torch._inductor", types.ModuleType("torch._inductor"))
    else:
        monkeypatch.delitem(sys.modules, "torch._inductor", raising=False)
    monkeypatch.delenv("TORCHINDUCTOR_CUDAGRAPHS", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with verify_step_workload.compiler_left_unimported(torch):
        assert ("_inductor" not in torch._lazy_modules) == hidden
    assert torch._lazy_modules == {"_dynamo", "_inductor"}
