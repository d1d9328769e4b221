"""`perfbot bench run` from the command line: exit codes and one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.runner import fingerprint
from tests.core.bench import test_bisect_artifact as bisection
from tests.runner.processes import running_with

FORMATS = Path(__file__).parents[1] / "core" / "formats" / "outputs"
BENCH_SH = 'echo "PERFBOT_METRIC step_ms=$(cat speed.txt) unit=ms better=lower"\n'


@pytest.fixture
def repo(git_builder, monkeypatch):
    monkeypatch.setattr(
        fingerprint, "python_stack", lambda python: {}
    )  # seconds of torch import, tested elsewhere
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base = git_builder.commit("base", {"bench.sh": BENCH_SH, "speed.txt": "10\n"})
    head = git_builder.commit("head", {"speed.txt": "20\n"})
    return git_builder, base, head


def bench_run(builder, *args):
    return main(["bench", "run", "--repo", str(builder.root), "--quiet", *args])


def test_a_successful_run_exits_0_and_writes_the_results(repo, tmp_path, capsys):
    builder, base, head = repo
    out = tmp_path / "r.json"
    status = bench_run(
        builder,
        "--base",
        base,
        "--head",
        head,
        "--suite",
        "command",
        "--command",
        "bash bench.sh",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--out",
        str(out),
        "--repo-name",
        "acme/engine",
    )
    assert status == 0
    data = json.loads(out.read_text())
    assert data["repo"] == "acme/engine"
    assert [r["metrics"]["step_ms"] for r in data["rounds"]] == [10.0, 20.0]
    assert "2 round(s) measured, 0 failed, complete" in capsys.readouterr().err


def test_failed_rounds_exit_1_with_a_clear_message_and_partial_results(repo, tmp_path, capsys):
    builder, base, head = repo
    out = tmp_path / "r.json"
    status = bench_run(
        builder,
        "--base",
        base,
        "--head",
        head,
        "--suite",
        "command",
        "--command",
        "exit 9",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--out",
        str(out),
    )
    assert status == 1
    assert (
        "0 round(s) measured, 2 failed, failed (no round was measured successfully; the last: "
        "command: exit status 9)" in capsys.readouterr().err
    )
    assert all(not r["ok"] for r in json.loads(out.read_text())["rounds"])


def test_the_suites_come_from_the_config_at_the_base_revision(repo, tmp_path):
    builder, _, _ = repo
    config = "bench:\n  rounds: 1\n  warmup: 0\n  suites:\n    mine:\n      kind: command\n      command: bash bench.sh\n"
    base = builder.commit("config", {".github/perfbot.yml": config})
    head = builder.commit(
        "head changes the config", {".github/perfbot.yml": config.replace("bash bench.sh", "exit 1")}
    )
    out = tmp_path / "r.json"
    assert bench_run(builder, "--base", base, "--head", head, "--suite", "mine", "--out", str(out)) == 0
    assert len(json.loads(out.read_text())["rounds"]) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--suite", "nope"], "unknown suite 'nope'"),
        (["--suite", "command"], "suite 'command' needs --command"),
        (["--suite", "sglang-eagle3"], "suite 'sglang-eagle3' needs bench.suites.sglang-eagle3"),
        (["--suite", "command", "--command", "true", "--rounds", "0"], "expected a positive integer"),
        (["--suite", "command", "--command", "true", "--timeout", "-3"], "expected a positive number"),
        (["--suite", "command", "--command", "true", "--timeout", "inf"], "expected a finite number"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(repo, tmp_path, capsys, args, message):
    builder, base, head = repo
    assert bench_run(builder, "--base", base, "--head", head, "--out", str(tmp_path / "r.json"), *args) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not (tmp_path / "r.json").exists()


def test_a_bad_revision_exits_2(repo, tmp_path, capsys):
    builder, base, _ = repo
    assert bench_run(builder, "--base", base, "--head", "nope", "--suite", "verify-step") == 2
    assert "unknown revision 'nope'" in capsys.readouterr().err


def test_a_dirty_work_tree_exits_2(repo, capsys):
    builder, base, head = repo
    (builder.root / "speed.txt").write_text("5\n")
    assert bench_run(builder, "--base", base, "--head", head, "--suite", "verify-step") == 2
    assert "uncommitted changes" in capsys.readouterr().err


def test_a_config_that_does_not_validate_exits_2(repo, tmp_path, capsys):
    builder, base, head = repo
    config = tmp_path / "c.yml"
    config.write_text("bench:\n  suites:\n    x:\n      kind: verify-step\n      world_size: -1\n")
    assert bench_run(builder, "--base", base, "--head", head, "--suite", "x", "--config", str(config)) == 2
    assert "bench.suites.x.world_size" in capsys.readouterr().err


def test_a_cancelled_run_kills_its_round_and_leaves_a_stopped_results_file(repo, tmp_path):
    builder, base, head = repo
    out, pid_file = tmp_path / "r.json", tmp_path / "round.pid"
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    # An engine interpreter that answers the fingerprint's probe at once (with nothing): torch's
    # import would take seconds, and this test is about the round.
    engine = tmp_path / "python"
    engine.write_text("#!/bin/sh\nexit 0\n")
    engine.chmod(0o755)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot",
            "bench",
            "run",
            "--repo",
            str(builder.root),
            "--base",
            base,
            "--head",
            head,
            "--suite",
            "command",
            "--command",
            f"echo $$ > {pid_file}; exec sleep 60.125",
            "--warmup",
            "0",
            "--rounds",
            "1",
            "--out",
            str(out),
            "--python",
            str(engine),
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 130
    assert "interrupted" in process.stderr.read()
    data = json.loads(out.read_text())
    assert (data["status"], data["rounds"]) == ("stopped", [])
    assert not running_with("60.125")  # by its arguments: in a PID namespace, $$ is not its pid here


def test_report_prints_the_worst_verdict_and_writes_each_suite_s_comparison(repo, tmp_path, capsys):
    builder, base, head = repo
    config = tmp_path / "c.yml"
    config.write_text(
        "bench:\n  warmup: 0\n  suites:\n    quick:\n      kind: command\n      command: bash bench.sh\n"
        "    broken:\n      kind: command\n      setup: echo 'no compiler <here>' >&2; exit 4\n"
        "      command: bash bench.sh\n"
    )
    out = tmp_path / "out"
    assert (
        bench_run(
            builder,
            "--base",
            base,
            "--head",
            head,
            "--suite",
            "quick",
            "--suite",
            "broken",
            "--rounds",
            "5",
            "--config",
            str(config),
            "--out",
            str(out / "results.json"),
        )
        == 1
    )
    capsys.readouterr()
    assert main(["bench", "report", str(out), "--markdown", str(tmp_path / "summary.md")]) == 0
    assert capsys.readouterr().out == "regression\n"  # quick's regression outranks broken's error
    markdown = (tmp_path / "summary.md").read_text()
    assert markdown.index("no verdict from `results.broken.json`") < markdown.index(
        "<sub>perfbot compare · suite quick"
    )
    assert (
        "The run ended **stopped**: set-up in base failed: setup: exit status 4: no compiler \\<here\\>"
        in markdown
    )
    (out / "results.quick.json").unlink()
    assert main(["bench", "report", str(out)]) == 0
    assert capsys.readouterr().out == "error\n"


def test_report_of_a_folder_without_results_is_an_error_and_of_no_folder_a_usage_error(tmp_path, capsys):
    assert main(["bench", "report", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "error\n"
    assert main(["bench", "report", str(tmp_path / "missing")]) == 2
    assert (
        capsys.readouterr().err == f"perfbot: error: {tmp_path / 'missing'}: not a folder of results files\n"
    )


def test_bench_report_reads_a_bisection_s_folder_through_the_app_s_reader(tmp_path, capsys):
    """A folder holding bisect.json is a bisection's artifact: its status is printed and its report
    written, about the GOOD, BAD and suite it names unless they are given; a mismatch is an error."""
    folder = tmp_path / "artifact"
    folder.mkdir()
    for name, data in bisection.artifact(bisection.culprit_report()).items():
        (folder / name).write_bytes(data)
    assert main(["bench", "report", str(folder), "--markdown", str(tmp_path / "s.md")]) == 0
    assert capsys.readouterr().out == "confirmed\n"
    assert f"**Culprit:** `{bisection.SECOND}`" in (tmp_path / "s.md").read_text()
    assert (
        main(
            [
                "bench",
                "report",
                str(folder),
                "--good",
                bisection.FIRST,
                "--bad",
                bisection.BAD,
                "--suite",
                bisection.SUITE,
                "--markdown",
                str(tmp_path / "s.md"),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == "error\n"
    assert "GOOD is aaaaaaaaaa" in (tmp_path / "s.md").read_text()


def test_a_file_of_more_benchmarks_than_a_suite_may_report_fails_each_round_in_one_line(
    repo, tmp_path, capsys
):
    """Google Benchmark's own output of 201 benchmarks (`DenseRange(1, 201)`): the model keeps at
    most `MAX_METRICS` per results file. Before, the first round's write raised a traceback and
    left the file at status `running` with no round."""
    builder, _, _ = repo
    many = (FORMATS / "google_benchmark_201.json").read_text()
    config = (
        "bench:\n  rounds: 1\n  warmup: 0\n  suites:\n    micro:\n      kind: google-benchmark\n"
        '      command: cp many.json "$PERFBOT_RESULT_FILE"\n'
    )
    base = builder.commit("many benchmarks", {".github/perfbot.yml": config, "many.json": many})
    out = tmp_path / "r.json"
    assert bench_run(builder, "--base", base, "--head", base, "--suite", "micro", "--out", str(out)) == 1
    error = capsys.readouterr().err
    assert "Traceback" not in error and error.count("\n") == 1
    assert "201 metrics, more than the 200 a suite may report" in error
    written = json.loads(out.read_text())
    assert written["status"] == "failed" and written["metrics"] == {}
    assert [r["ok"] for r in written["rounds"]] == [False, False]
    why = written["rounds"][0]["error"]
    assert "201 metrics, more than the 200 a suite may report" in why and "\n" not in why


def test_a_head_that_times_a_benchmark_in_another_unit_is_compared_in_the_bases(repo, tmp_path, capsys):
    """Google Benchmark's real output: base times `BM_build_dict` with `->Unit(kMillisecond)`,
    head with `->Unit(kMicrosecond)` (the same work). Before, head's microseconds were compared
    with base's milliseconds: about 100,000% slower. Each round copies one saved file, so every
    round of a side repeats its value to the last bit, which the comparison warns of."""
    builder, _, _ = repo
    config = (
        "bench:\n  rounds: 3\n  warmup: 0\n  suites:\n    micro:\n      kind: google-benchmark\n"
        '      command: cp gb.json "$PERFBOT_RESULT_FILE"\n'
    )
    files = {
        ".github/perfbot.yml": config,
        "gb.json": (FORMATS / "google_benchmark_unit_ms.json").read_text(),
    }
    base = builder.commit("base: ms", files)
    head = builder.commit("head: us", {"gb.json": (FORMATS / "google_benchmark_unit_us.json").read_text()})
    out = tmp_path / "r.json"
    assert bench_run(builder, "--base", base, "--head", head, "--suite", "micro", "--out", str(out)) == 0
    written = json.loads(out.read_text())
    assert written["metrics"]["BM_build_dict/1000"]["unit"] == "ms"
    capsys.readouterr()
    assert main(["compare", str(out), "--format", "json"]) in (0, 1)
    compared = json.loads(capsys.readouterr().out)
    [row] = [m for m in compared["metrics"] if m["name"] == "BM_build_dict/1000"]
    assert row["unit"] == "ms" and 0.5 < row["ratio"] < 2, row
    assert any(
        w.startswith("BM_build_dict/1000: every round of both sides gave the same value")
        for w in compared["warnings"]
    )
