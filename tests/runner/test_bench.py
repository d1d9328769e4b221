"""`bench.run` end to end with the `command` suite: worktrees, ABBA rounds, failures, adaptive rounds."""

from __future__ import annotations

import dataclasses
import io
import json
import sys

import git
import pytest

from bot.core.config.schema import BenchConfig
from bot.core.config.suite_kinds.command import CommandSuite
from bot.core.judge import stats
from bot.runner import bench, fingerprint
from bot.runner.options import MeasureOptions
from bot.runner.progress import Progress
from bot.runner.suites.base import SuiteError
from bot.runner.suites.command import CommandBench
from bot.runner.suites.sglang_eagle3 import SglangEagle3Bench
from bot.runner.suites.verify_step import VerifyStepBench


@pytest.fixture(autouse=True)
def no_torch_probe(request, monkeypatch):
    """Asking the interpreter for torch's versions takes seconds; one test below keeps it."""
    if request.node.name != "test_base_and_head_are_measured_in_abba_order_from_their_own_checkouts":
        monkeypatch.setattr(fingerprint, "python_stack", lambda python: {})


# The options of `run` below that are how to measure; the others are the run's own.
MEASURE = {f.name for f in dataclasses.fields(MeasureOptions)}


def run(repo, base, head, tmp_path, command="bash bench.sh", config=None, **options):
    measured = {key: options.pop(key) for key in MEASURE & set(options)}
    measure = MeasureOptions(repo=repo, command=command, **measured)
    opts = bench.BenchOptions(
        base=base,
        head=head,
        suites=options.pop("suites", ["command"]),
        out=tmp_path / "out" / "results.json",
        measure=measure,
        **options,
    )
    stream = io.StringIO()
    outcomes = bench.run(opts, config or BenchConfig(), Progress(stream))
    return outcomes, stream.getvalue()


def load(outcome):
    return json.loads(outcome.path.read_text())


def test_base_and_head_are_measured_in_abba_order_from_their_own_checkouts(bench_repo, tmp_path):
    repo, base, head = bench_repo
    # The engine's interpreter is this one, which has torch.
    (outcome,), progress = run(repo, base, head, tmp_path, rounds=2, warmup=1, python=sys.executable)
    data = load(outcome)
    assert (outcome.status, outcome.ok_rounds, outcome.failed_rounds) == ("complete", 4, 0)
    assert [r["side"] for r in data["rounds"]] == ["base", "head", "head", "base"]
    assert [r["index"] for r in data["rounds"]] == [0, 0, 1, 1]
    assert {r["side"]: r["metrics"]["step_ms"] // 100 for r in data["rounds"]} == {"base": 10, "head": 20}
    assert data["metrics"] == {"step_ms": {"unit": "ms", "better": "lower"}}
    assert (data["base"]["sha"], data["head"]["sha"]) == (base, head)
    assert data["base"]["fingerprint"]["git"]["sha"] == base
    assert "after" in data["head"]["fingerprint"]
    assert data["base"]["fingerprint"]["packages"]["torch"]
    assert [w["side"] for w in data["warmups"]] == ["base", "head"]
    assert "round 2/2 of base (" in progress and "round 1/2 of head (" in progress and "ETA" in progress


def test_the_worktrees_are_removed_afterwards(bench_repo, tmp_path):
    repo, base, head = bench_repo
    run(repo, base, head, tmp_path, rounds=1, warmup=0)
    assert len(git.Repo(repo).git.worktree("list").splitlines()) == 1


def test_an_aa_run_benchmarks_base_on_both_sides(bench_repo, tmp_path):
    repo, base, _ = bench_repo
    (outcome,), _ = run(repo, base, None, tmp_path, rounds=1, warmup=0, aa=True)
    data = load(outcome)
    assert data["base"]["sha"] == data["head"]["sha"] == base
    assert {r["metrics"]["step_ms"] // 100 for r in data["rounds"]} == {10}


def test_failed_rounds_are_recorded_and_the_run_goes_on(bench_repo, tmp_path):
    repo, base, head = bench_repo
    command = 'if [ "$PERFBOT_SIDE" = head ]; then echo boom >&2; exit 1; fi; bash bench.sh'
    (outcome,), _ = run(repo, base, head, tmp_path, command=command, rounds=2, warmup=0)
    data = load(outcome)
    assert (outcome.ok_rounds, outcome.failed_rounds, data["status"]) == (2, 2, "complete")
    failed = [r for r in data["rounds"] if not r["ok"]]
    assert {r["side"] for r in failed} == {"head"}
    assert all(r["error"] == "command: exit status 1: boom" and r["metrics"] == {} for r in failed)


def test_stop_on_failure_stops_cleanly_and_keeps_what_was_measured(bench_repo, tmp_path):
    repo, base, head = bench_repo
    command = 'if [ "$PERFBOT_SIDE" = head ]; then exit 7; fi; bash bench.sh'
    (outcome,), _ = run(repo, base, head, tmp_path, command=command, rounds=3, warmup=0, stop_on_failure=True)
    data = load(outcome)
    assert data["status"] == "stopped"
    assert data["error"].startswith("round 0 on head failed: command: exit status 7")
    assert [(r["side"], r["ok"]) for r in data["rounds"]] == [("base", True), ("head", False)]
    assert data["finished_at"]


def test_a_run_where_nothing_was_measured_says_failed(bench_repo, tmp_path):
    repo, base, head = bench_repo
    (outcome,), _ = run(repo, base, head, tmp_path, command="echo nothing useful", rounds=1, warmup=0)
    assert load(outcome)["status"] == "failed"
    assert outcome.error.startswith("no round was measured successfully; the last: no metrics: ")


def test_a_failing_setup_stops_the_suite_before_any_round(bench_repo, tmp_path):
    repo, base, head = bench_repo
    config = BenchConfig(
        suites={"cmd": CommandSuite(kind="command", command="bash bench.sh", setup="exit 4")}
    )
    (outcome,), _ = run(repo, base, head, tmp_path, suites=["cmd"], config=config, rounds=1, warmup=0)
    data = load(outcome)
    assert data["rounds"] == [] and data["status"] == "stopped"
    assert data["error"] == "set-up in base failed: setup: exit status 4"


def test_adaptive_rounds_go_on_until_the_statistics_can_decide(bench_repo, tmp_path):
    repo, base, head = bench_repo
    (outcome,), _ = run(repo, base, head, tmp_path, rounds=2, max_rounds=8, warmup=0)
    # A doubling is plain at once, but the statistics core decides nothing below its minimum rounds.
    assert outcome.ok_rounds == 2 * stats.MIN_ROUNDS


def test_no_extra_round_is_run_when_the_cap_is_too_low_to_reach_a_decision(bench_repo, tmp_path):
    repo, base, head = bench_repo
    (outcome,), _ = run(repo, base, head, tmp_path, rounds=1, max_rounds=stats.MIN_ROUNDS - 1, warmup=0)
    assert outcome.ok_rounds == 2


def test_the_step_summary_is_appended(bench_repo, tmp_path):
    repo, base, head = bench_repo
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    run(repo, base, head, tmp_path, rounds=1, warmup=0, summary_path=summary)
    text = summary.read_text()
    assert text.startswith("earlier step\n### perfbot bench: `command`")
    assert "| step\\_ms (↓) |" in text


def test_several_suites_write_a_file_each(bench_repo, tmp_path):
    repo, base, head = bench_repo
    config = BenchConfig(suites={"fast": CommandSuite(kind="command", command="bash bench.sh")})
    outcomes, _ = run(
        repo, base, head, tmp_path, suites=["command", "fast"], config=config, rounds=1, warmup=0
    )
    assert [o.path.name for o in outcomes] == ["results.command.json", "results.fast.json"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"suites": ["nope"]}, "unknown suite 'nope'"),
        ({"suites": []}, "name at least one --suite"),
        ({"head": None}, "--head is required"),
        ({"aa": True}, "--aa benchmarks --base against itself"),
        ({"base": "no-such-rev"}, "unknown revision 'no-such-rev'"),
    ],
)
def test_bad_requests_are_refused_before_anything_runs(bench_repo, tmp_path, change, message):
    repo, base, head = bench_repo
    options = {"base": base, "head": head, **change}
    with pytest.raises((bench.BenchError, SuiteError, ValueError), match=message):
        run(repo, options.pop("base"), options.pop("head"), tmp_path, **options)
    assert not (tmp_path / "out").exists()


def test_a_dirty_work_tree_is_refused_unless_allowed(bench_repo, tmp_path):
    repo, base, head = bench_repo
    (repo / "speed.txt").write_text("99\n")
    with pytest.raises(bench.BenchError, match="uncommitted changes"):
        run(repo, base, head, tmp_path, rounds=1, warmup=0)
    (outcome,), _ = run(repo, base, head, tmp_path, rounds=1, warmup=0, allow_dirty=True)
    assert outcome.ok_rounds == 2


def test_a_suite_s_own_timeout_applies_unless_the_command_line_gives_one(bench_repo, tmp_path):
    repo, base, head = bench_repo
    config = BenchConfig(
        suites={"slow": CommandSuite(kind="command", command="sleep 2; bash bench.sh", timeout=0.5)}
    )
    (outcome,), _ = run(repo, base, head, tmp_path, suites=["slow"], config=config, rounds=1, warmup=0)
    assert load(outcome)["rounds"][0]["error"] == "slow: timed out after 0.5s and was killed"
    (outcome,), _ = run(
        repo, base, head, tmp_path, suites=["slow"], config=config, rounds=1, warmup=0, timeout=60
    )
    assert outcome.ok_rounds == 2


def test_a_run_the_results_file_cannot_record_is_refused_before_any_round(bench_repo, tmp_path, monkeypatch):
    repo, base, head = bench_repo
    monkeypatch.setattr(
        fingerprint,
        "machine",
        lambda python, stacks=None, gpus=None: {"env": {f"NCCL_{i}": "1" for i in range(6000)}},
    )
    with pytest.raises(
        bench.BenchError,
        match=r"results.json: this run cannot be recorded: "
        r"fingerprint: more than 5000 values$",
    ):
        run(repo, base, head, tmp_path, rounds=1, warmup=0)
    assert not list((tmp_path / "out").glob("*.json"))


class TorchCommandBench(CommandBench):
    """A suite of no built-in kind whose rounds import torch."""

    needs_torch = True


def test_every_suite_that_needs_torch_is_checked_for_it_whatever_its_class(tmp_path):
    config = CommandSuite(kind="command", command="true")
    plain, torch_suite = CommandBench("plain", config), TorchCommandBench("mine", config)
    plain.python = torch_suite.python = str(tmp_path / "python")
    bench.check_torch([plain], {})  # a suite that does not need torch is not asked about it
    with pytest.raises(bench.BenchError) as refused:
        bench.check_torch([plain, torch_suite], {})
    assert str(refused.value) == (
        f"{tmp_path / 'python'}: this interpreter cannot import torch (it did not answer perfbot's probe), "
        "and suite 'mine' runs torch: name the engine's interpreter with --python (the action's "
        "engine-python) or bench.python"
    )
    bench.check_torch([plain, torch_suite], {"torch": "2.5.0"})


def test_the_built_in_torch_suites_say_they_need_torch_and_the_command_suite_does_not():
    assert VerifyStepBench.needs_torch and SglangEagle3Bench.needs_torch and not CommandBench.needs_torch
