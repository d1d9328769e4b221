"""`perfbot score --map` and `perfbot triage --map` on the sample repository: the map's evidence in
the reasons, the call graph read from the map's commit, and one-line errors for a bad map file."""

from __future__ import annotations

import json
import subprocess

import pytest

from bot.cli.main import main
from bot.sandbox import sample

STATE = "mini_engine/distributed/parallel_state.py"
MAP = {
    "schema": 1,
    "commit": sample.BEFORE_SLOW_SHA,
    "suite": "verify-step",
    "step": "verify step",
    "steps": 10,
    "source": "sys.monitoring",
    "kernels": [],
    "functions": [
        {
            "path": STATE,
            "function": "tensor_model_parallel_all_reduce",
            "line": 18,
            "calls_per_step": 32,
            "host_share": 0.03,
        }
    ],
}
HELPER = f"""\
diff --git a/{STATE} b/{STATE}
--- a/{STATE}
+++ b/{STATE}
@@ -11,5 +11,5 @@ def get_tp_communicator() -> PyNcclCommunicator:
 def get_tp_communicator() -> PyNcclCommunicator:
     global _TP_COMMUNICATOR
     if _TP_COMMUNICATOR is None:
-        _TP_COMMUNICATOR = PyNcclCommunicator()
+        _TP_COMMUNICATOR = PyNcclCommunicator(group=None)
     return _TP_COMMUNICATOR
"""
REACHED = "called from tensor_model_parallel_all_reduce(), which runs 32 times per verify step"


@pytest.fixture(scope="module")
def sample_repo(tmp_path_factory):
    path = tmp_path_factory.mktemp("sample") / "repo"
    sample.build(path)
    subprocess.run(["git", "checkout", "--quiet", sample.BEFORE_SLOW_SHA], cwd=path, check=True)
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, name: str, data: object) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_score_with_a_map_and_the_repository_reaches_the_allreduces_helper(sample_repo, tmp_path, capsys):
    diff, mapped = write(tmp_path, "d.diff", HELPER), write(tmp_path, "map.json", MAP)
    code, out, _ = run(capsys, "score", diff, "--map", mapped, "--repo", sample_repo, "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["level"] == "high"
    assert any(reason.startswith(REACHED) and "[map.reaches, +44.7]" in reason for reason in data["reasons"])
    _, plain, _ = run(capsys, "score", diff, "--repo", sample_repo, "--format", "json")
    assert json.loads(plain)["level"] == "medium"


def test_score_reads_the_map_from_a_results_file(sample_repo, tmp_path, capsys):
    diff = write(tmp_path, "d.diff", HELPER)
    results = write(tmp_path, "results.json", {"suites": [], "step_map": MAP})
    _, out, _ = run(capsys, "score", diff, "--map", results, "--repo", sample_repo)
    assert REACHED in out


def test_without_a_repository_holding_the_maps_commit_only_the_map_judges(sample_repo, tmp_path, capsys):
    diff = write(tmp_path, "d.diff", HELPER)
    elsewhere = write(tmp_path, "map.json", dict(MAP, commit="0" * 40))
    for argv in (("--map", elsewhere, "--repo", sample_repo), ("--map", elsewhere)):
        code, out, _ = run(capsys, "score", diff, *argv, "--format", "json")
        assert code == 0 and not any("map." in reason for reason in json.loads(out)["reasons"])


def test_triage_with_a_map_names_the_measurement_for_the_slow_commit(sample_repo, tmp_path, capsys):
    mapped = write(tmp_path, "map.json", MAP)
    code, out, _ = run(
        capsys,
        "triage",
        f"{sample.BEFORE_SLOW_SHA}~1..{sample.SLOW_SHA}",
        "--repo",
        sample_repo,
        "--map",
        mapped,
        "--format",
        "json",
        "--quiet",
    )
    data = json.loads(out)
    assert code == 0 and data["commits"][0]["sha"] == sample.SLOW_SHA
    assert any(
        "[map.per-step, +59.6] at mini_engine/distributed/parallel_state.py" in reason
        for reason in data["commits"][0]["reasons"]
    )


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{", "not a JSON map file (Expecting property name"),
        (b"\xff\xfe\x00", "not a JSON map file"),
        ("[" * 100_000 + "]" * 100_000, "not a JSON map file"),
        ({"schema": 2}, "schema: must be 1"),
        (dict(MAP, functions=[{"path": "/etc/x.py"}]), "functions[0]"),
        ({"step_map": {"schema": 1, "commit": "zz"}}, "step_map.commit"),
    ],
)
def test_a_bad_map_file_is_a_one_line_error_naming_it(tmp_path, capsys, content, fragment):
    diff = write(tmp_path, "d.diff", HELPER)
    path = tmp_path / "map.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    for verb in (("score", diff), ("triage", "a..b")):
        code, _, err = run(capsys, *verb, "--map", path)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith(f"perfbot: error: {path}: ") and fragment in err, err


def test_a_missing_or_oversized_map_file_or_a_directory_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    diff = write(tmp_path, "d.diff", HELPER)
    code, _, err = run(capsys, "score", diff, "--map", tmp_path / "none.json")
    assert code == 2 and "none.json: cannot read (No such file or directory)" in err
    code, _, err = run(capsys, "score", diff, "--map", tmp_path)
    assert code == 2 and "is a directory, not a map file" in err
    monkeypatch.setattr("bot.cli.step_map.MAX_BYTES", 10)
    code, _, err = run(capsys, "score", diff, "--map", write(tmp_path, "m.json", MAP))
    assert code == 2 and err.count("\n") == 1 and "larger than the 0 MiB a map file may be" in err


GETTER = {
    "path": STATE,
    "function": "get_tp_communicator",
    "line": 11,
    "calls_per_step": 8,
    "host_share": 0.0002,
}
# The lines of parallel_state.py two ranks' steps run: not the getter's first-call branch (line 14).
STATE_RAN = [[13, 13], [15, 15], [19, 19], [21, 21]]
DECOY = f"""\
diff --git a/{STATE} b/{STATE}
--- a/{STATE}
+++ b/{STATE}
@@ -12,4 +12,6 @@ def get_tp_communicator() -> PyNcclCommunicator:
     global _TP_COMMUNICATOR
     if _TP_COMMUNICATOR is None:
         _TP_COMMUNICATOR = PyNcclCommunicator()
+        if _TP_COMMUNICATOR.world_size < 1:
+            raise RuntimeError("no ranks")
     return _TP_COMMUNICATOR
"""


def test_score_with_a_maps_lines_judges_a_raise_in_the_first_call_branch_as_set_up(
    sample_repo, tmp_path, capsys
):
    diff = write(tmp_path, "d.diff", DECOY)
    functions = {**MAP, "functions": [*MAP["functions"], GETTER]}
    by_function = write(tmp_path, "f.json", functions)
    by_line = write(tmp_path, "l.json", {**functions, "lines": {STATE: STATE_RAN}})
    _, out, _ = run(capsys, "score", diff, "--map", by_function, "--repo", sample_repo, "--format", "json")
    assert json.loads(out)["level"] == "high"
    code, out, _ = run(capsys, "score", diff, "--map", by_line, "--repo", sample_repo, "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["level"] != "high"
    assert not any("[map.per-step" in reason for reason in data["reasons"])
