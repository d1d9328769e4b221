"""A round is ok only when measured: crashes, hangs, non-zero exits and garbage are recorded as failures."""

from __future__ import annotations

import os
import time

import pytest

from bot.core.config.suite_kinds.command import CommandSuite
from bot.runner.rounds import child_env, run_command, run_round
from bot.runner.suites.base import PROFILED_PASS, WORKER_START, Command, RoundContext, RoundId
from bot.runner.suites.command import CommandBench

from .processes import running_with


def round_of(tmp_path, command: str, timeout: float = 30, read_only: tuple = ()):
    suite = CommandBench("cmd", CommandSuite(kind="command", command=command))
    tmp_path.mkdir(exist_ok=True)
    return run_round(
        suite, RoundContext(tmp_path, tmp_path / "round", "head", RoundId("counted", 0), read_only), timeout
    )


def test_a_round_that_prints_metrics_is_measured(tmp_path):
    result = round_of(tmp_path, "echo 'PERFBOT_METRIC t=1.5 unit=ms better=lower'")
    assert (result.ok, result.error, result.metrics) == (True, None, {"t": 1.5})


def test_a_non_zero_exit_fails_the_round_with_the_last_error_line(tmp_path):
    result = round_of(
        tmp_path, "echo 'PERFBOT_METRIC t=1 better=lower'; echo 'CUDA error: out of memory' >&2; exit 3"
    )
    assert not result.ok
    assert result.metrics == {}
    assert result.error == "cmd: exit status 3: CUDA error: out of memory"


def test_a_crash_by_signal_is_named(tmp_path):
    result = round_of(tmp_path, "kill -SEGV $$")
    assert not result.ok
    assert "SIGSEGV" in result.error


def test_a_command_past_its_deadline_has_timed_out_and_no_exit_status_of_its_own(tmp_path):
    output = run_command(
        Command("slow", ("sleep", "30")), tmp_path, child_env({}), time.monotonic() + 0.5, tmp_path / "slow"
    )
    assert output.timed_out and not output.ok and output.returncode is None
    assert round_of(tmp_path, "sleep 30", timeout=0.5).error == "cmd: timed out after 0.5s and was killed"
    done = run_command(
        Command("quick", ("bash", "-c", "exit 3")),
        tmp_path,
        child_env({}),
        time.monotonic() + 30,
        tmp_path / "quick",
    )
    assert not done.timed_out and not done.ok and done.returncode == 3


def test_a_hanging_command_is_killed_with_everything_it_started(tmp_path):
    result = round_of(tmp_path, "sleep 300.25 & wait", timeout=3)
    assert not result.ok
    assert result.error == "cmd: timed out after 3s and was killed"
    assert not running_with("300.25")


def test_garbage_output_fails_the_round(tmp_path):
    result = round_of(tmp_path, "head -c 3000 /dev/urandom")
    assert not result.ok
    assert "no metrics" in result.error


def test_a_missing_program_fails_the_round(tmp_path):
    result = round_of(tmp_path, "no-such-program-perfbot")
    assert not result.ok
    assert "exit status 127" in result.error


def test_children_keep_nvlink_multicast_off_and_learn_their_round(tmp_path, monkeypatch):
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    monkeypatch.setenv("PYTHONPATH", "/already/there")
    context = RoundContext(tmp_path, tmp_path / "r", "base", RoundId("counted", 4))
    env = child_env({"PYTHONPATH": "/mine"}, context, passed=["PYTHONPATH"])
    assert env["NCCL_NVLS_ENABLE"] == "0"
    assert env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["NVSHMEM_DISABLE_NVLS"] == "1"
    assert env["PYTHONPATH"] == os.pathsep.join(["/mine", "/already/there"])
    assert (env["PERFBOT_SIDE"], env["PERFBOT_ROUND"]) == ("base", "4")
    # Not passed by the config, the runner's PYTHONPATH stays the runner's.
    assert child_env({"PYTHONPATH": "/mine"}, context)["PYTHONPATH"] == "/mine"
    assert "PYTHONPATH" not in child_env({}, context)


@pytest.mark.parametrize(
    "which,variable,folder",
    [
        (RoundId("counted", 0), "0", "0"),
        (RoundId("counted", 4), "4", "4"),
        (RoundId("warmup", 1), "-1", "warmup1"),
        (RoundId("warmup", 3), "-3", "warmup3"),
        (PROFILED_PASS, "-100", "profile"),
        (WORKER_START, "-1", "worker"),
    ],
)
def test_a_benchmark_learns_which_round_it_is_in_as_documented(tmp_path, which, variable, folder):
    """docs/runner.md: counted rounds from 0, warm-ups negative, the profiled pass -100."""
    assert child_env({}, RoundContext(tmp_path, tmp_path, "head", which))["PERFBOT_ROUND"] == variable
    assert which.label == folder


@pytest.mark.parametrize("kind,number", [("counted", -1), ("warmup", 0), ("warmup", -2)])
def test_a_round_is_numbered_as_its_kind_counts(kind, number):
    with pytest.raises(ValueError, match=f"a {kind} round numbered {number}"):
        RoundId(kind, number)


def test_children_run_the_engine_s_interpreter_first_on_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    env = child_env({}, python="/opt/engine/bin/python")
    assert env["PATH"] == os.pathsep.join(["/opt/engine/bin", "/usr/bin", "/bin"])
    assert env["PERFBOT_PYTHON"] == "/opt/engine/bin/python"
