"""The sample repository: ten fixed commits, one slow allreduce, ranked first by triage, benchmarked on CPU."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from bot.cli import main as cli
from bot.core.config.schema import load as load_config
from bot.runner import bench
from bot.runner.options import MeasureOptions
from bot.runner.progress import Progress
from examples.sample_repo import HISTORY, SLOW_SUBJECT, build, main
from tests.support.missing import importorskip

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sample(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    return build(tmp_path / "sample")


def test_the_history_is_ten_commits_with_the_same_shas_everywhere(sample, tmp_path):
    assert len(sample["commits"]) == len(HISTORY) == 10
    again = build(tmp_path / "again")
    assert again["commits"] == sample["commits"]


def test_the_slow_commit_touches_the_communicator_and_the_parallel_state(sample):
    repo = git.Repo(sample["path"])
    slow = repo.commit(sample["slow"])
    assert slow.message.strip() == SLOW_SUBJECT
    assert set(slow.stats.files) == {
        "mini_engine/distributed/pynccl.py",
        "mini_engine/distributed/parallel_state.py",
    }


def test_triage_ranks_the_slow_commit_first(sample, capsys):
    status = cli.main(
        ["triage", "--repo", sample["path"], f"{sample['first']}..{sample['head']}", "--format", "json"]
    )
    assert status == 0
    ranked = json.loads(capsys.readouterr().out)["commits"]
    assert ranked[0]["sha"] == sample["slow"]
    assert ranked[0]["level"] == "high"
    assert all(commit["score"] < ranked[0]["score"] / 2 for commit in ranked[1:])


def test_the_slow_allreduce_returns_a_copy_where_the_old_one_reduced_in_place(sample, tmp_path):
    torch = importorskip("torch")
    import torch.distributed as dist

    repo = git.Repo(sample["path"])
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        for sha, in_place in ((sample["before_slow"], True), (sample["slow"], False)):
            source = repo.git.show(f"{sha}:mini_engine/distributed/pynccl.py")
            module_path = tmp_path / f"pynccl_{sha[:7]}.py"
            module_path.write_text(source)
            spec = importlib.util.spec_from_file_location(module_path.stem, module_path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            tensor = torch.ones(4)
            result = module.PyNcclCommunicator().all_reduce(tensor)
            assert (result is tensor) is in_place
            assert torch.equal(result, torch.ones(4))
    finally:
        dist.destroy_process_group()


def test_the_slow_parallel_state_pads_every_allreduce_even_at_one_rank(sample, tmp_path):
    """The world-size-1 shortcut no longer skips the work: a zeroed buffer of the captured size per
    call (the memsets a single GPU sees too), the input copied into it, the values unchanged."""
    torch = importorskip("torch")
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    repo = git.Repo(sample["path"])
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        for sha, pads in ((sample["before_slow"], False), (sample["slow"], True)):
            package = tmp_path / sha[:7] / "mini_engine"
            (package / "distributed").mkdir(parents=True)
            for name in (
                "__init__.py",
                "distributed/__init__.py",
                "distributed/pynccl.py",
                "distributed/parallel_state.py",
            ):
                (package / name).write_text(repo.git.show(f"{sha}:mini_engine/{name}") + "\n")
            sys.path.insert(0, str(package.parent))
            try:
                module = importlib.import_module("mini_engine.distributed.parallel_state")
                tensor = torch.randn(3, 8)
                with profile(activities=[ProfilerActivity.CPU]) as profiled:
                    result = module.tensor_model_parallel_all_reduce(tensor)
                ops = {e.key for e in profiled.key_averages()}
                assert torch.equal(result, tensor) and (result is tensor) is not pads
                assert ("aten::zeros" in ops) is pads
            finally:
                sys.path.remove(str(package.parent))
                for name in [m for m in sys.modules if m.startswith("mini_engine")]:
                    del sys.modules[name]
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_an_ab_run_of_the_sample_on_cpu_measures_both_sides_through_its_allreduce(sample, tmp_path):
    importorskip("torch")
    config = load_config(
        "bench:\n  suites:\n    verify-step:\n      kind: verify-step\n      device: cpu\n"
        "      world_size: 2\n      iters: 3\n      warmup_iters: 1\n      allreduce: "
        "mini_engine.distributed.parallel_state:tensor_model_parallel_all_reduce\n"
    )
    options = bench.BenchOptions(
        base=sample["before_slow"],
        head=sample["slow"],
        suites=["verify-step"],
        out=tmp_path / "ab.json",
        measure=MeasureOptions(repo=sample["path"], rounds=1, warmup=0, timeout=240, python=sys.executable),
    )  # the engine's: it has torch
    (outcome,) = bench.run(options, config.bench, Progress(io.StringIO()))
    data = json.loads(outcome.path.read_text())
    assert outcome.status == "complete", [r["error"] for r in data["rounds"]]
    assert [r["side"] for r in data["rounds"]] == ["base", "head"]
    assert "verify_eager_ms" in data["metrics"] and "verify_graph_ms" not in data["metrics"]


def test_the_script_prints_its_manifest_and_refuses_a_used_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main([str(tmp_path / "s")]) == 0
    assert json.loads(capsys.readouterr().out)["slow"]
    assert main([str(tmp_path / "s")]) == 2
    assert "not empty" in capsys.readouterr().err


def test_the_documented_command_builds_it(tmp_path, sample):
    done = subprocess.run(
        [sys.executable, "examples/sample_repo.py", str(tmp_path / "cli")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["commits"] == sample["commits"]


def _profiled_run(sample, tmp_path, base: str, head: str, name: str) -> Path:
    config = load_config(
        "bench:\n  suites:\n    verify-step:\n      kind: verify-step\n      device: cpu\n"
        "      world_size: 2\n      iters: 3\n      warmup_iters: 1\n      profile: true\n"
        "      allreduce: mini_engine.distributed.parallel_state:tensor_model_parallel_all_reduce\n"
    )
    options = bench.BenchOptions(
        base=base,
        head=head,
        suites=["verify-step"],
        out=tmp_path / f"{name}.json",
        measure=MeasureOptions(repo=sample["path"], rounds=1, warmup=0, timeout=240, python=sys.executable),
    )
    (outcome,) = bench.run(options, config.bench, Progress(io.StringIO()))
    data = json.loads(outcome.path.read_text())
    assert outcome.status == "complete" and not data.get("profile_errors"), data.get("profile_errors")
    return outcome.path


@pytest.mark.slow
def test_the_profiled_pass_maps_the_step_and_compare_names_the_slow_commit_s_launching_lines(
    sample, tmp_path, capsys
):
    importorskip("torch")
    results = _profiled_run(sample, tmp_path, sample["before_slow"], sample["slow"], "ab")
    step_map = json.loads(results.read_text())["step_map"]
    assert step_map["commit"] == sample["before_slow"] and step_map["source"] == "torch.profiler"
    functions = {(f["path"], f["function"]): f for f in step_map["functions"]}
    reduce = functions[("mini_engine/distributed/parallel_state.py", "tensor_model_parallel_all_reduce")]
    assert reduce["calls_per_step"] > 0 and 0 < reduce["host_share"] <= 1
    # the lines the warm steps ran, recorded after the profiled ones: the allreduce's body among them
    ranges = step_map["lines"]["mini_engine/distributed/parallel_state.py"]
    assert ranges and all(first <= last for first, last in ranges)
    diff = tmp_path / "slow.diff"
    diff.write_text(git.Repo(sample["path"]).git.diff(sample["before_slow"], sample["slow"]) + "\n")
    assert cli.main(["compare", str(results), "--diff", str(diff)]) == 0
    text = capsys.readouterr().out
    state = "mini_engine/distributed/parallel_state.py"
    # The padding's new zeroed buffer and its copy, each at the line of the commit that made it.
    assert (
        f"launched by {state}:22 _pad_to_graph_size" in text
        and f"{state}:22 _pad_to_graph_size, 8.00/step (changed by the diff)" in text
    )
    assert f"launched by {state}:24 _pad_to_graph_size, 8.00/step (changed by the diff)" in text
    for line in text.splitlines():
        if "launched by" in line and "(changed by the diff)" in line:
            path, number = line.split("launched by ")[1].split(" ")[0].rsplit(":", 1)
            assert int(number) in _added_lines(sample, path)


def _added_lines(sample, path: str) -> set[int]:
    from bot.core.render.kernels import changed_lines

    diff = git.Repo(sample["path"]).git.diff(sample["before_slow"], sample["slow"])
    return set(changed_lines(diff).head.get(path, ()))


@pytest.mark.slow
def test_an_a_a_run_of_the_sample_attributes_nothing(sample, tmp_path, capsys):
    importorskip("torch")
    results = _profiled_run(sample, tmp_path, sample["before_slow"], sample["before_slow"], "aa")
    assert cli.main(["compare", str(results), "--format", "json"]) == 0
    kernels = json.loads(capsys.readouterr().out)["kernels"]
    assert [k for k in kernels["kernels"] if k["launched_by"]] == []
