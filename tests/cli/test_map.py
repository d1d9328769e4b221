"""`perfbot map`: the map of a trace torch's profiler wrote on the CPU for a model laid out like an
engine (tests/runner/trace_engine), made against a repository at the traced commit; what such a map
lets `perfbot score --map` see; one-line errors for what is not a trace, or no repository's."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.core import stepmap
from bot.runner import trace_map

ENGINE = Path(__file__).resolve().parents[1] / "runner" / "trace_engine"
TRACE = ENGINE / "trace.json.gz"
STATE = "engine/distributed/parallel_state.py"
MAPPED = {
    ("engine/scheduler.py", "Scheduler.step"): 1.0,
    ("engine/model_runner.py", "ModelRunner.forward"): 1.0,
    ("engine/layers/linear.py", "RowParallelLinear.forward"): 2.0,
    ("engine/utils/tracing.py", "traced.<locals>.decorator.<locals>.inner"): 2.0,
    (STATE, "tensor_model_parallel_all_reduce"): 2.0,
    (STATE, "get_tp_group"): 2.0,
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture(scope="module")
def engine_repo(tmp_path_factory) -> Path:
    """A repository holding the engine as it was traced, one commit after an unrelated first one."""
    repo = tmp_path_factory.mktemp("engine") / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("engine\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    shutil.copytree(ENGINE / "engine", repo / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "engine")
    return repo


def diff(path: str, hunk: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n{hunk}"


CONFIG_DEFAULT = diff(
    "engine/config.py",
    "@@ -6,3 +6,3 @@ class EngineConfig:\n     hidden: int = 32\n     layers: int = 2\n"
    "-    sync_allreduce: bool = False\n+    sync_allreduce: bool = True\n",
)
WRAPPER_SYNC = diff(
    "engine/utils/tracing.py",
    "@@ -11,3 +11,4 @@ def traced(name):\n             began = time.perf_counter()\n"
    "             out = fn(*args, **kwargs)\n+            torch.cuda.synchronize()\n"
    "             _TIMINGS[name] = _TIMINGS.get(name, 0.0) + time.perf_counter() - began\n",
)
ENV_DEFAULT = diff(
    "engine/envs.py",
    '@@ -2,2 +2,2 @@ import os\n \n-ENGINE_CHECK_FINITE = os.environ.get("ENGINE_CHECK_FINITE", "0") == "1"\n'
    '+ENGINE_CHECK_FINITE = os.environ.get("ENGINE_CHECK_FINITE", "1") == "1"\n',
)
ERROR_PATH = diff(
    STATE,
    "@@ -18,2 +18,2 @@ def get_tp_group():\n def _group_error(group):\n"
    '-    return f"no process group {group!r}: call init_process_group first"\n'
    '+    return f"no process group {group!r}: call init_process_group() first"\n',
)


def make_map(engine_repo: Path, tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "map.json"
    assert main(["map", str(TRACE), "--repo", str(engine_repo), "-o", str(out), *extra]) == 0
    return out


def test_map_writes_the_map_of_a_cpu_torch_profiler_trace(engine_repo, tmp_path, capsys):
    out = make_map(engine_repo, tmp_path, "--suite", "server", "--step", "decode step")
    mapped = stepmap.parse(json.loads(out.read_text()))
    assert {(f.path, f.function): f.calls_per_step for f in mapped.functions} == MAPPED
    assert mapped.commit == git(engine_repo, "rev-parse", "HEAD")
    assert (mapped.suite, mapped.step, mapped.steps, mapped.source) == (
        "server",
        "decode step",
        3,
        "torch.profiler",
    )
    assert mapped.lines is None and all(not k.launched_by for k in mapped.kernels)
    share = {f.function: f.host_share for f in mapped.functions}
    assert (
        share["ModelRunner.forward"] > share["tensor_model_parallel_all_reduce"] > share["get_tp_group"] > 0
    )
    err = capsys.readouterr().err
    assert err == (
        f"perfbot: the map of 6 functions of the repository over 3 decode steps at {mapped.commit[:12]}, "
        f"written to {out}\n"
    )


def test_map_writes_to_standard_output_by_default_and_reads_a_plain_trace(engine_repo, tmp_path, capsys):
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress(TRACE.read_bytes()))
    assert main(["map", str(plain), "--repo", str(engine_repo)]) == 0
    captured = capsys.readouterr()
    mapped = stepmap.parse(json.loads(captured.out))
    assert (mapped.suite, mapped.step) == ("trace", "profiled step")
    assert len(mapped.functions) == 6
    assert captured.err.endswith("over 3 profiled steps at " + mapped.commit[:12] + "\n")


def test_map_names_the_calls_by_the_commit_given(engine_repo, tmp_path, capsys):
    # At the first commit the repository has none of the engine's files: no call is its own.
    first = git(engine_repo, "rev-parse", "HEAD~1")
    assert main(["map", str(TRACE), "--repo", str(engine_repo), "--commit", first]) == 2
    assert "no Python call of the trace is a function of the repository" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "without", "level", "reason"),
    [
        # a config default copied into a constant of another module at import time
        (
            CONFIG_DEFAULT,
            "low",
            "high",
            "the default of `EngineConfig.sync_allreduce`, copied to `_SYNC` in "
            f"{STATE}, is read by tensor_model_parallel_all_reduce(), which runs 2 times per profiled step",
        ),
        # the wrapper a decorator factory puts in place of the allreduce
        (WRAPPER_SYNC, "low", "high", "runs 2 times per profiled step"),
        # an environment default read through its module
        (ENV_DEFAULT, "low", "high", "`ENGINE_CHECK_FINITE` is read by RowParallelLinear.forward()"),
        # an error path of a hot file: set-up share
        (ERROR_PATH, "medium", "low", "never runs per profiled step"),
    ],
)
def test_a_trace_made_map_lets_the_score_see_the_step(
    engine_repo, tmp_path, capsys, change, without, level, reason
):
    mapped = make_map(engine_repo, tmp_path)
    patch = tmp_path / "change.diff"
    patch.write_text(change)
    capsys.readouterr()
    main(["score", str(patch), "--format", "json"])
    assert json.loads(capsys.readouterr().out)["level"] == without
    main(["score", str(patch), "--repo", str(engine_repo), "--map", str(mapped), "--format", "json"])
    scored = json.loads(capsys.readouterr().out)
    assert scored["level"] == level
    assert any(reason in r for r in scored["reasons"]), scored["reasons"]


def test_score_takes_the_trace_itself_as_its_map(engine_repo, tmp_path, capsys):
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress(TRACE.read_bytes()))
    patch = tmp_path / "change.diff"
    patch.write_text(CONFIG_DEFAULT)
    main(["score", str(patch), "--repo", str(engine_repo), "--map", str(plain), "--format", "json"])
    assert json.loads(capsys.readouterr().out)["level"] == "high"


def one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"not json", "not a JSON trace"),
        (b"\x1f\x8bnot gzip", "not a gzip file"),
        (json.dumps({"schema": 1}).encode(), "not a Chrome trace (no traceEvents array)"),
        (
            json.dumps(
                {"traceEvents": [{"ph": "X", "cat": "python_function", "name": "x.py(1): f"}]}
            ).encode(),
            "no Python call of the trace is a function of the repository at that commit",
        ),
    ],
)
def test_a_file_that_is_no_trace_of_the_repository_is_a_one_line_error(
    engine_repo, tmp_path, capsys, content, fragment
):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    err = one_line_error(capsys, ["map", str(bad), "--repo", str(engine_repo)])
    assert err.startswith("perfbot: error: ") and "bad.json: " in err and fragment in err


def test_a_trace_over_the_size_cap_is_refused_compressed_or_not(engine_repo, tmp_path, capsys, monkeypatch):
    size = len(gzip.decompress(TRACE.read_bytes()))
    monkeypatch.setattr(trace_map, "MAX_TRACE_BYTES", size - 1)
    err = one_line_error(capsys, ["map", str(TRACE), "--repo", str(engine_repo)])
    assert f"trace.json.gz: larger than {(size - 1) // 2**20} MiB" in err
    monkeypatch.setattr(trace_map, "MAX_TRACE_BYTES", TRACE.stat().st_size - 1)
    assert "larger than" in one_line_error(capsys, ["map", str(TRACE), "--repo", str(engine_repo)])
    monkeypatch.setattr(trace_map, "MAX_TRACE_BYTES", size)
    assert main(["map", str(TRACE), "--repo", str(engine_repo), "-o", str(tmp_path / "m.json")]) == 0


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--commit", "no-such-revision"], "no-such-revision"),
        (["--suite", " "], "--suite: 1-100 printable characters"),
        (["--step", "x" * 101], "--step: 1-100 printable characters"),
        (["--suite", "a\tb"], "--suite: 1-100 printable characters"),
        (["-o", "/nonexistent-folder/map.json"], "/nonexistent-folder/map.json: cannot write"),
    ],
)
def test_a_bad_option_is_a_one_line_error(engine_repo, capsys, args, fragment):
    err = one_line_error(capsys, ["map", str(TRACE), "--repo", str(engine_repo), *args])
    assert fragment in err


def test_a_missing_trace_or_repository_is_a_one_line_error(engine_repo, tmp_path, capsys):
    assert "nothing.json: No such file" in one_line_error(
        capsys, ["map", str(tmp_path / "nothing.json"), "--repo", str(engine_repo)]
    )
    assert "no such directory" in one_line_error(
        capsys, ["map", str(TRACE), "--repo", str(tmp_path / "none")]
    )
    assert "--repo" in one_line_error(capsys, ["map", str(TRACE)])


def test_the_longest_accepted_names_pass(engine_repo, tmp_path):
    out = tmp_path / "map.json"
    assert main(["map", str(TRACE), "--repo", str(engine_repo), "--suite", "s" * 100, "-o", str(out)]) == 0
    assert stepmap.parse(json.loads(out.read_text())).suite == "s" * 100


def test_score_sends_a_gzipped_trace_to_perfbot_map(engine_repo, tmp_path, capsys):
    patch = tmp_path / "change.diff"
    patch.write_text(CONFIG_DEFAULT)
    err = one_line_error(capsys, ["score", str(patch), "--repo", str(engine_repo), "--map", str(TRACE)])
    assert f"{TRACE}: gzipped; make a map of a gzipped trace with `perfbot map`, then use the map" in err


def test_a_trace_without_profiler_steps_is_one_step_said_in_the_singular(engine_repo, tmp_path, capsys):
    data = json.loads(gzip.decompress(TRACE.read_bytes()))
    data["traceEvents"] = [
        e for e in data["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(data))
    out = tmp_path / "map.json"
    assert main(["map", str(whole), "--repo", str(engine_repo), "-o", str(out)]) == 0
    assert " over 1 profiled step at " in capsys.readouterr().err
    assert out.read_text().startswith(
        '{\n "schema": 1,\n "commit": '
    )  # one space a level: maps are read by people
    assert stepmap.parse(json.loads(out.read_text())).steps == 1


def test_a_bad_name_is_shown_clipped(engine_repo, capsys):
    err = one_line_error(capsys, ["map", str(TRACE), "--repo", str(engine_repo), "--step", "x" * 101])
    assert err.endswith(f"--step: 1-100 printable characters, got {'x' * 40!r}\n")


def test_triage_with_a_trace_made_map_sees_a_changed_default_the_step_reads(engine_repo, tmp_path, capsys):
    """The call graph of a triage's map was built without the range's changed files, so a default
    copied into a module constant read per step was missed (scored 1, not high). Failed before."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(engine_repo), str(clone)], check=True)
    config = clone / "engine" / "config.py"
    config.write_text(
        config.read_text().replace("sync_allreduce: bool = False", "sync_allreduce: bool = True")
    )
    git(clone, "commit", "-qam", "Sync every allreduce")
    mapped = make_map(clone, tmp_path, "--commit", "HEAD~1")
    capsys.readouterr()
    argv = [
        "triage",
        "HEAD~1..HEAD",
        "--repo",
        str(clone),
        "--map",
        str(mapped),
        "--format",
        "json",
        "--quiet",
    ]
    main(argv)
    [commit] = json.loads(capsys.readouterr().out)["commits"]
    assert commit["level"] == "high", commit
