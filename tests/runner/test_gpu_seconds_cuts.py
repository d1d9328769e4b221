"""Issue 39's fourth part: the engine's import path walked again without parsing what find lists the
same; a gated suite's processes started before the walk after the set-up, waiting at a gate before
they run the repository's code; and the profiled pass in the warm worker (no profiler spare beside
it) where that worker is not kept across runs. Each fails as loudly as before where it fails: a
change of the import path still ends the run, a process told to stop at the gate runs nothing, a
worker that dies in its pass leaves its side without a profile, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.core.config.schema import BenchConfig
from bot.core.config.suite_kinds.verify_step import VerifyStepSuite
from bot.core.judge import results
from bot.runner import bench, integrity, report, timeline
from bot.runner.integrity import Guard, TreeChanged
from bot.runner.suites import make_suite
from bot.runner.suites.base import WORKER_START, RoundContext
from bot.runner.suites.command import CommandBench
from tests.runner import test_gpu_seconds as gpu_seconds
from tests.runner.test_gpu_seconds import config, run
from tests.runner.test_manifest_walk import tree
from tests.support.missing import importorskip

# The fixtures of test_gpu_seconds: the command suite given a worker and spares, no torch probe.
no_torch_probe = gpu_seconds.no_torch_probe
with_worker = gpu_seconds.with_worker
with_spares = gpu_seconds.with_spares

# ---------------------------------------------------------------- the import path's walks


@pytest.fixture
def parses(monkeypatch) -> list[int]:
    """How many find listings were parsed, one entry each."""
    counted: list[int] = []
    parse = integrity._parsed

    def counting(listed):
        counted.append(len(listed))
        return parse(listed)

    monkeypatch.setattr(integrity, "_parsed", counting)
    return counted


def test_a_folder_that_find_lists_the_same_is_the_earlier_walk_without_a_parse(tmp_path, parses):
    root = tree(tmp_path / "t")
    first = integrity.walk(root)
    assert first.listing is not None and first.manifest == integrity.manifest(root)
    parses.clear()
    assert integrity.walk(root, since=first) is first
    assert parses == []


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "pkg" / "mod.py").write_text("x = 2\n"),  # same size: the times tell
        lambda root: (root / "pkg" / "new.py").write_text(""),
        lambda root: os.chmod(root / "pkg" / "mod.py", 0o600),
        lambda root: os.utime(root, (0, 0)),  # the folder's own entry, which find does not list
    ],
)
def test_a_change_is_a_new_walk_parsed_in_full(tmp_path, parses, change):
    root = tree(tmp_path / "t")
    first = integrity.walk(root)
    change(root)
    parses.clear()
    again = integrity.walk(root, since=first)
    assert again is not first and again.manifest == integrity.manifest(root)
    assert integrity.changes(first.manifest, again.manifest)
    assert parses, "the new listing was parsed"


def test_where_find_cannot_answer_every_walk_is_python_s_and_compared_in_full(tmp_path, monkeypatch):
    root = tree(tmp_path / "t")
    monkeypatch.setattr(integrity, "_listing", lambda *args: None)
    first = integrity.walk(root)
    assert first.listing is None
    (root / "pkg" / "mod.py").write_text("x = 2\n")
    again = integrity.walk(root, since=first)
    assert integrity.changes(first.manifest, again.manifest) == ["changed pkg/mod.py"]


def test_the_end_s_walk_of_an_unchanged_import_path_parses_nothing_and_a_planted_file_still_ends_the_run(
    tmp_path, parses
):
    site = tree(tmp_path / "engine" / "site-packages")
    guard = Guard({"base": tree(tmp_path / "base")}, shared=[site], shared_fenced=True)
    guard.seal_shared()
    parses.clear()
    guard.check_shared()
    assert parses == []
    (site / "planted.pth").write_text("import os\n")
    with pytest.raises(TreeChanged, match=r"added planted\.pth"):
        guard.check_shared()


def test_bytecode_python_wrote_is_still_accepted_and_becomes_the_reference(tmp_path, parses):
    site = tree(tmp_path / "engine" / "site-packages")
    guard = Guard({"base": tree(tmp_path / "base")}, shared=[site], shared_fenced=True)
    guard.seal_shared()
    (site / "pkg" / "__pycache__" / "new.cpython-311.pyc").write_bytes(b"")
    guard.check_shared()
    parses.clear()
    guard.check_shared()  # the reference is what the last walk found: unchanged since
    assert parses == []


# ---------------------------------------------------------------- the report


def test_the_report_says_how_long_the_processes_waited_at_the_gate():
    data = {
        "seconds": 8.0,
        "phases": [
            {
                "phase": "worker start",
                "start": 0.1,
                "seconds": 3.0,
                "side": "head",
                "inside": {"start": 1.8, "gate": 0.2, "build": 0.1, "run": 0.5},
            }
        ],
    }
    text = timeline.markdown(timeline.read(data))
    assert "interpreter and torch start 1.8 s, waiting at the gate for the import path's walk 0.2 s" in text


# ---------------------------------------------------------------- the profiled pass in the worker


def test_a_worker_that_dies_in_its_profiled_pass_leaves_its_side_without_a_profile_saying_why(
    bench_repo, tmp_path, with_spares
):
    """The worker's second request is the pass (its first, its one timed round): it dies there.
    The side has no profile and the file says why; every round stands, and so does the verdict."""
    repo, base, head = bench_repo
    with_spares["DIE_AT"] = "2"
    outcome, data, _ = run(repo, base, head, tmp_path / "results.json", config(profile=True))
    assert outcome.status == "complete", data["error"]
    loaded = results.load(outcome.path.read_bytes())
    assert loaded.base.profile is None and loaded.head.profile is None
    assert loaded.profile_errors is not None
    assert set(loaded.profile_errors) == {"base", "head"}
    assert all("the worker ended" in why for why in loaded.profile_errors.values()), loaded.profile_errors
    profiled = [(p["side"], p["detail"]) for p in data["timeline"]["phases"] if p["phase"] == "profile"]
    assert profiled == [("base", "in the worker"), ("head", "in the worker")]  # where it failed
    assert all(r["ok"] for r in data["rounds"])
    assert report.judge(outcome.path)[0] == "regression"


# ---------------------------------------------------------------- the gate


@pytest.mark.parametrize("gated", [True, False])
def test_a_gated_suite_s_processes_start_before_the_import_path_s_walk_and_wait_at_the_gate(
    bench_repo, tmp_path, with_spares, monkeypatch, gated
):
    """The walk after the set-up is the reference of every later walk: a gated suite's processes
    are launched before it (their interpreter and torch start meanwhile) and get the gate, which
    opens only after it; a suite that is not gated gets no gate, and its processes start after."""
    events: list[tuple[str, object]] = []
    start, seal = bench.Worker.start, Guard.seal_shared
    gates: set = set()

    def starting(suite, context, *args, **kwargs):
        events.append(("launch", context.gate))
        gates.add(context.gate)
        return start(suite, context, *args, **kwargs)

    def sealing(self):
        events.append(("seal", [g.exists() for g in gates if g is not None]))
        return seal(self)

    monkeypatch.setattr(bench.Worker, "start", starting)
    monkeypatch.setattr(Guard, "seal_shared", sealing)
    monkeypatch.setattr(CommandBench, "gated", gated)
    repo, base, head = bench_repo
    outcome, data, _ = run(repo, base, head, tmp_path / "results.json", config())
    assert outcome.status == "complete", data["error"]
    kinds = [kind for kind, _ in events]
    if gated:
        assert kinds == ["launch"] * 6 + ["seal"]
        (gate,) = gates
        assert gate is not None and gate.name == bench.GATE
        assert events[-1] == ("seal", [False])  # the gate was shut while the walk ran
        walked = [
            p
            for p in gpu_seconds.phases(data, "integrity")
            if "while the processes started" in (p.get("detail") or "")
        ]
        assert len(walked) == 1
        first = min(p["start"] for p in gpu_seconds.phases(data, "round"))
        assert first >= walked[0]["start"] + walked[0]["seconds"]
    else:
        assert kinds == ["seal"] + ["launch"] * 6 and gates == {None}


def _repository(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose allreduce module notes, as it is imported, whether the gate was open."""
    repo, gate = tmp_path / "repo", tmp_path / "gate"
    (repo / "probe").mkdir(parents=True)
    (repo / "probe" / "__init__.py").write_text(
        "import os\n"
        f"open({str(tmp_path / 'imported')!r}, 'w').write(str(os.path.exists({str(gate)!r})))\n"
        "def allreduce(tensor):\n    return tensor\n"
    )
    return repo, gate


def _gated_worker(tmp_path: Path, repo: Path, gate: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot.runner.suites.verify_step_workload",
            "--out",
            "unused",
            "--serve",
            "--ready",
            str(tmp_path / "ready.json"),
            "--cold",
            "--gate",
            str(gate),
            "--allreduce",
            "probe:allreduce",
            "--pythonpath",
            str(repo),
            "--device",
            "cpu",
            "--world-size",
            "1",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("on_the_path", [False, True])
def test_the_repository_s_code_runs_only_once_the_gate_is_open(tmp_path, on_the_path):
    """Imported through ``--allreduce`` (or, with the repository on PYTHONPATH, by anything at all:
    then the gate comes before torch's import too), the repository's module finds the gate open."""
    importorskip("torch")
    repo, gate = _repository(tmp_path)
    worker = _gated_worker(tmp_path, repo, gate, {"PYTHONPATH": str(repo)} if on_the_path else None)
    try:
        # That the gate holds the repository's code back is the next test's (a process stopped at
        # the gate never imports it); this one shows the code runs once the gate opens.
        gate.touch()
        deadline = time.monotonic() + 120
        while not (tmp_path / "ready.json").exists():
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert (tmp_path / "imported").read_text() == "True"
        assert json.loads((tmp_path / "ready.json").read_text())["seconds"]["gate"] >= 0
    finally:
        worker.communicate(b"stop\n", timeout=120)
    assert worker.returncode == 0


def test_a_process_told_to_stop_at_the_gate_leaves_without_running_the_repository_s_code(tmp_path):
    importorskip("torch")
    repo, gate = _repository(tmp_path)
    worker = _gated_worker(tmp_path, repo, gate)
    _, err = worker.communicate(b"stop\n", timeout=120)
    assert worker.returncode == 0, err.decode()[-2000:]
    assert not (tmp_path / "imported").exists() and not (tmp_path / "ready.json").exists()


def test_the_repository_is_importable_where_a_folder_of_the_import_path_lies_in_it(tmp_path, monkeypatch):
    from bot.runner.suites import verify_step_workload

    inside = tmp_path / "repo" / "src"
    inside.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", ["/usr/lib/python3", str(inside)])
    assert verify_step_workload.repository_importable([str(tmp_path / "repo")])
    monkeypatch.setattr(sys, "path", ["/usr/lib/python3"])
    assert not verify_step_workload.repository_importable([str(tmp_path / "repo")])


def test_verify_step_s_workers_and_spares_get_the_gate_and_the_others_none(tmp_path):
    suite = make_suite(
        "v",
        BenchConfig(suites={"v": VerifyStepSuite(kind="verify-step", worker=True)}),
        python=sys.executable,
    )
    gate = tmp_path / "gate"
    context = RoundContext(tmp_path, tmp_path / "w", "base", WORKER_START, gate=gate)
    for command in (
        suite.worker_command(context),
        suite.spare_command(context),
        suite.spare_command(context, True),
    ):
        argv = list(command.argv)
        assert argv[argv.index("--gate") + 1] == str(gate)
    plain = RoundContext(tmp_path, tmp_path / "w", "base", WORKER_START)
    assert (
        "--gate" not in suite.worker_command(plain).argv and "--gate" not in suite.spare_command(plain).argv
    )
    assert suite.gated and not CommandBench.gated
