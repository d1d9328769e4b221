"""After the timed rounds, one profiled pass per side whose Kineto trace becomes that side's profile;
and long-lived workers that serve the rounds between fresh ones (verify-step on CPU)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from bot.core.config.schema import BenchConfig
from bot.core.config.suite_kinds.command import CommandSuite
from bot.core.config.suite_kinds.verify_step import VerifyStepSuite
from bot.core.judge import profile, results, stats
from bot.core.render import compare as render_compare
from bot.runner import bench, fingerprint, profiling
from bot.runner.options import MeasureOptions
from bot.runner.progress import Progress
from bot.runner.suites.base import PROFILED_PASS, RoundContext
from bot.runner.suites.command import CommandBench
from tests.core.judge.profile_data import FILL
from tests.support.missing import importorskip

from .test_bench import MEASURE
from .test_scope import wait_until_gone

ROOT = Path(__file__).resolve().parents[2]
# Writes a Kineto-shaped trace into $PERFBOT_PROFILE_DIR: the slower revision launches a fill more.
TRACE_PY = f"""\
import json, os, sys
sys.path.insert(0, {str(ROOT)!r})
from tests.core.judge.profile_data import trace
extra = [({FILL[0]!r}, 30.0)] if open("speed.txt").read().strip() == "20" else []
step = [("gemm_a", 10.0), *extra]
json.dump(trace([step, step]), open(os.path.join(os.environ["PERFBOT_PROFILE_DIR"], "t.pt.trace.json"), "w"))
"""


@pytest.fixture(autouse=True)
def no_torch_probe(monkeypatch):
    """The interpreter's packages are not asked for (a second each); it is this one, which has torch."""
    monkeypatch.setattr(fingerprint, "python_stack", lambda python: {"torch": "(not probed in these tests)"})


def run(repo, base, head, tmp_path, config, **options):
    measure = MeasureOptions(repo=repo, **{key: options.pop(key) for key in MEASURE & set(options)})
    opts = bench.BenchOptions(
        base=base,
        head=head,
        suites=[next(iter(config.suites))],
        out=tmp_path / "out" / "results.json",
        measure=measure,
        **options,
    )
    stream = io.StringIO()
    (outcome,) = bench.run(opts, config, Progress(stream))
    return outcome, stream.getvalue()


def command_suite(profile_command: str | None, on: bool | None = True) -> BenchConfig:
    return BenchConfig(
        suites={
            "quick": CommandSuite(
                kind="command", command="bash bench.sh", profile=on, profile_command=profile_command
            )
        }
    )


# Writes a trace of two steps of one kernel, where the profiled pass is told it is (PERFBOT_ROUND).
PASS_PY = f"""\
import json, os, sys
sys.path.insert(0, {str(ROOT)!r})
from tests.core.judge.profile_data import trace
assert os.environ["PERFBOT_ROUND"] == "-100", os.environ["PERFBOT_ROUND"]
json.dump(trace([[("gemm_a", 10.0)]] * 2), open(os.path.join(os.environ["PERFBOT_PROFILE_DIR"], "t.pt.trace.json"), "w"))
"""


def test_a_profiled_pass_returns_the_profile_its_suite_read_or_why_there_is_none(tmp_path):
    (tmp_path / "pass.py").write_text(PASS_PY)
    suite = CommandBench(
        "quick", CommandSuite(kind="command", command="false", profile_command=f"{sys.executable} pass.py")
    )
    outcome = profiling.profile_side(
        suite, RoundContext(tmp_path, tmp_path / "pass", "head", PROFILED_PASS), 60
    )
    assert outcome.error is None and outcome.seconds > 0
    assert outcome.profile is not None and outcome.profile.steps == 2
    assert [k.name for k in outcome.profile.kernels] == ["gemm_a"]
    failing = CommandBench("quick", CommandSuite(kind="command", command="true", profile_command="exit 4"))
    outcome = profiling.profile_side(
        failing, RoundContext(tmp_path, tmp_path / "failed", "head", PROFILED_PASS), 60
    )
    assert (outcome.profile, outcome.error) == (None, "quick-profile: exit status 4")


def test_each_side_gets_the_profile_of_its_own_trace_and_compare_shows_the_diff(bench_repo, tmp_path):
    repo, base, head = bench_repo
    (tmp_path / "trace.py").write_text(TRACE_PY)
    outcome, progress = run(
        repo,
        base,
        head,
        tmp_path,
        command_suite(f"{sys.executable} {tmp_path / 'trace.py'}"),
        rounds=3,
        warmup=0,
    )
    loaded = results.load(outcome.path.read_bytes())
    assert outcome.status == "complete" and loaded.profile_errors is None
    assert "quick: profiled pass of base" in progress and "not timed" in progress
    d = profile.diff_of(loaded.base.profile, loaded.head.profile)
    assert d is not None and [(k.name, k.change, k.head_calls) for k in d.kernels] == [
        (FILL[0], "appeared", 1.0)
    ]
    assert loaded.base.profile.steps == 2 and len(loaded.rounds) == 6  # the passes are not rounds
    markdown = render_compare.compare_markdown(loaded, stats.decide(loaded))
    assert "<details><summary>Kernels (GPU kernels" in markdown and "1 appeared" in markdown


def test_a_pass_that_writes_no_trace_leaves_its_side_without_a_profile_and_says_why(bench_repo, tmp_path):
    repo, base, head = bench_repo
    outcome, _ = run(repo, base, head, tmp_path, command_suite("true"), rounds=3, warmup=0)
    loaded = results.load(outcome.path.read_bytes())
    assert outcome.status == "complete" and loaded.base.profile is None and loaded.head.profile is None
    assert set(loaded.profile_errors) == {"base", "head"}
    assert "no trace (*.json, *.json.gz) was written to profile/" in loaded.profile_errors["head"]
    text = render_compare.compare_text(loaded, stats.decide(loaded))
    assert "note: no kernel diff: the profiled pass of head failed" in text


def test_profiling_is_off_unless_the_config_or_the_command_line_turns_it_on(bench_repo, tmp_path):
    repo, base, head = bench_repo
    (tmp_path / "trace.py").write_text(TRACE_PY)
    command = f"{sys.executable} {tmp_path / 'trace.py'}"
    off, progress = run(repo, base, head, tmp_path / "a", command_suite(command, on=None), rounds=3, warmup=0)
    assert "profiled pass" not in progress and results.load(off.path.read_bytes()).head.profile is None
    on, _ = run(
        repo, base, head, tmp_path / "b", command_suite(command, on=None), rounds=3, warmup=0, profile=True
    )
    assert results.load(on.path.read_bytes()).head.profile is not None
    off, _ = run(
        repo, base, head, tmp_path / "c", command_suite(command, on=True), rounds=3, warmup=0, profile=False
    )
    assert results.load(off.path.read_bytes()).head.profile is None


def verify_step(**options) -> BenchConfig:
    return BenchConfig(
        suites={
            "verify-step": VerifyStepSuite(
                kind="verify-step", device="cpu", iters=5, warmup_iters=1, **options
            )
        }
    )


@pytest.mark.slow
def test_a_worker_warms_up_as_it_starts_and_serves_the_middle_rounds_spares_the_rest(bench_repo, tmp_path):
    importorskip("torch")
    repo, base, head = bench_repo
    outcome, _ = run(
        repo,
        base,
        head,
        tmp_path,
        verify_step(worker=True),
        rounds=3,
        warmup=1,
        python=sys.executable,
        timeout=120,
        profile=True,
    )
    data = json.loads(outcome.path.read_text())
    assert outcome.status == "complete", [r["error"] for r in data["rounds"]]
    assert [(r["index"], r["process"]) for r in data["rounds"]] == [
        (0, "fresh"),
        (0, "fresh"),
        (1, "worker"),
        (1, "worker"),
        (2, "fresh"),
        (2, "fresh"),
    ]
    assert [(w["side"], w["ok"]) for w in data["warmups"]] == [("base", True), ("head", True)]
    phases = data["timeline"]["phases"]
    # Each worker's start built the model and captured once: that was its side's warm-up round.
    started = [p for p in phases if p["phase"] == "worker start"]
    workers = [p for p in started if p["detail"].startswith("started")]
    assert [p["side"] for p in workers] == ["base", "head"]
    assert all({"build", "capture", "run"} <= set(p["inside"]) for p in workers)
    assert not [p for p in phases if p["phase"] == "warm-up"]
    # Each fresh round ran in a spare: a process of its own, set up (interpreter, torch) beside the
    # workers, with no warm-up: its round built the model and captured, as a fresh process does.
    spares = [p for p in started if p["detail"] == "a fresh round's process, started ahead (no warm-up)"]
    assert sorted(p["side"] for p in spares) == ["base", "base", "head", "head"]
    assert all(p["inside"]["start"] > 0 for p in spares)  # the interpreter's and torch's start
    fresh = [p for p in phases if p["phase"] == "round" and p["detail"] == "fresh, started ahead"]
    assert len(fresh) == 4
    assert all(p["inside"]["start"] == 0 and {"build", "capture"} <= set(p["inside"]) for p in fresh)
    # The profiled pass ran in each side's warm worker, after the rounds, and gave each side a
    # profile: no profiler spare starts where the workers are not kept across runs.
    profiled = [(p["side"], p["detail"]) for p in phases if p["phase"] == "profile"]
    assert profiled == [("base", "in the worker"), ("head", "in the worker")]
    assert not [p for p in started if p["detail"].startswith("the profiled pass's process")]
    loaded = results.load(outcome.path.read_bytes())
    assert loaded.base.profile is not None and loaded.head.profile is not None


@pytest.mark.slow
def test_a_worker_that_dies_leaves_its_side_to_fresh_processes(git_builder, tmp_path):
    importorskip("torch")
    # The allreduce dies in any process of the side's worker (its folder is the worker's; a spare's
    # is not), nowhere else: the worker dies as it warms up, before it is ready.
    hook = (
        "import os\nimport torch.distributed as dist\n\n\ndef all_reduce(tensor):\n"
        "    out = os.environ.get('PERFBOT_OUT_DIR', '')\n"
        "    if '/workers/' in out and '-spare-' not in out:\n        os._exit(3)\n"
        "    dist.all_reduce(tensor)\n    return tensor\n"
    )
    base = git_builder.commit("base", {"hooks.py": hook})
    head = git_builder.commit("head", {"README": "x\n"})
    outcome, progress = run(
        git_builder.root,
        base,
        head,
        tmp_path,
        verify_step(worker=True, allreduce="hooks:all_reduce"),
        rounds=3,
        warmup=1,
        python=sys.executable,
        timeout=120,
    )
    data = json.loads(outcome.path.read_text())
    for side in ("base", "head"):
        assert (
            f"the worker of {side} did not start (verify-step: the worker ended while starting (exit status 3)"
            in progress
        )
    # Neither worker warmed up, so each side's warm-up ran as a round, in a fresh process.
    assert [(w["side"], w["ok"]) for w in data["warmups"]] == [("base", True), ("head", True)]
    assert all(r["ok"] and r["process"] == "fresh" for r in data["rounds"]), [
        r["error"] for r in data["rounds"]
    ]


@pytest.mark.slow
def test_a_process_a_worker_starts_does_not_outlive_it(git_builder, tmp_path):
    """A worker runs the code under test too: what it starts (here a process that leaves its session
    and environment, as a forging head's would) ends with the worker, as with any round's scope."""
    importorskip("torch")
    marker = "303.25"
    hook = (
        "import os\nimport subprocess\nimport torch.distributed as dist\n\n\ndef all_reduce(tensor):\n"
        "    if os.environ.get('PERFBOT_ROUND') == '-1' and not os.path.exists('escaped'):\n"
        "        open('escaped', 'w').close()\n"
        f"        subprocess.Popen(['env', '-i', '/usr/bin/setsid', 'sleep', '{marker}'])\n"
        "    dist.all_reduce(tensor)\n    return tensor\n"
    )
    base = git_builder.commit("base", {"hooks.py": hook})
    head = git_builder.commit("head", {"README": "x\n"})
    outcome, _ = run(
        git_builder.root,
        base,
        head,
        tmp_path,
        verify_step(worker=True, allreduce="hooks:all_reduce"),
        rounds=3,
        warmup=1,
        python=sys.executable,
        timeout=120,
    )
    data = json.loads(outcome.path.read_text())
    assert any(r["process"] == "worker" for r in data["rounds"]), "a worker served rounds"
    assert wait_until_gone(marker) == []
