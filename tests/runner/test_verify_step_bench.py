"""The verify-step benchmark runs on CPU (gloo, tiny shapes) and reports every CPU metric."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.missing import importorskip

importorskip("torch")

from bot.runner import verify_step_bench  # noqa: E402

CPU_METRICS = {"allreduce_verify_us", "allreduce_draft_us", "verify_eager_ms", "draft_ms", "cycle_ms", "tok_s"}


def bench(tmp_path, *args):
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-m", "bot.runner.verify_step_bench", "--out", str(out),
                           "--device", "cpu", "--iters", "3", "--warmup-iters", "1", "--timeout", "120", *args],
                          capture_output=True, text=True, timeout=180)
    return done, out


def test_one_rank_on_cpu_reports_medians_and_the_derived_cycle(tmp_path):
    done, out = bench(tmp_path, "--world-size", "1", "--accept-length", "2.0", "--num-steps", "3")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    metrics = report["metrics"]
    assert set(metrics) == CPU_METRICS
    assert all(value > 0 for value in metrics.values())
    assert metrics["cycle_ms"] == pytest.approx(3 * metrics["draft_ms"] + metrics["verify_eager_ms"])
    assert metrics["tok_s"] == pytest.approx(1000 * 2.0 / metrics["cycle_ms"])
    assert (report["world_size"], report["device"], report["shape"]["hidden"]) == (1, "cpu", 64)


def test_an_allreduce_that_cannot_be_imported_fails_the_run(tmp_path):
    done, out = bench(tmp_path, "--world-size", "1", "--allreduce", "no_such_module:all_reduce")
    assert done.returncode != 0
    assert "worker exit codes" in done.stderr
    assert not out.exists()


@pytest.mark.parametrize("args", [["--heads", "6", "--kv-heads", "4"], ["--topk", "9", "--experts", "8"]])
def test_impossible_shapes_are_refused(args):
    parsed = verify_step_bench.build_parser().parse_args(["--out", "x", *args])
    with pytest.raises(SystemExit):
        verify_step_bench.resolve_shape(parsed, "cpu")


def test_a_dimension_that_does_not_split_over_the_ranks_is_refused():
    with pytest.raises(SystemExit, match="does not split over 3 ranks"):
        verify_step_bench.split(64, 3)


def test_the_shape_defaults_follow_the_device():
    parsed = verify_step_bench.build_parser().parse_args(["--out", "x", "--layers", "3"])
    assert verify_step_bench.resolve_shape(parsed, "cuda").hidden == 7168
    assert verify_step_bench.resolve_shape(parsed, "cpu").hidden == 64
    assert verify_step_bench.resolve_shape(parsed, "cpu").layers == 3


def test_when_one_rank_dies_the_others_are_ended_instead_of_waiting_for_it(tmp_path):
    hook = tmp_path / "hooks"
    hook.mkdir()
    (hook / "half_broken.py").write_text(
        "import os\nimport torch.distributed as dist\n"
        "if os.environ['RANK'] == '1':\n    raise SystemExit(3)\n"
        "def all_reduce(tensor):\n    dist.all_reduce(tensor)\n    return tensor\n")
    done, out = bench(tmp_path, "--world-size", "2", "--pythonpath", str(hook), "--allreduce", "half_broken:all_reduce")
    assert done.returncode != 0
    assert "worker exit codes" in done.stderr and "timed out" not in done.stderr
    assert not out.exists()
