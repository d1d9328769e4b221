"""`perfbot bisect` end to end on a real repository whose benchmark really slows down at one commit."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.core.bisect import plan as bisection
from bot.runner import sample_repo
from tests.support.missing import importorskip

PLAIN_PYTHON = shutil.which("python3") or sys.executable
COMMUNICATOR_BENCH = Path(__file__).parents[1] / "support" / "communicator_bench.py"

# The benchmark times real work: a busy loop whose length the engine's communicator sets.
BENCH = """\
import time
from engine.pynccl import SPINS
start = time.perf_counter()
total = 0
for i in range(SPINS):
    total += i
elapsed = (time.perf_counter() - start) * 1000
print(f"PERFBOT_METRIC allreduce_ms={elapsed} unit=ms better=lower")
"""
CONFIG = """\
version: 1
bench:
  warmup: 0
  suites:
    spin:
      kind: command
      command: python3 bench.py
"""


def history(git_builder, culprit: int, count: int = 8) -> tuple[str, list[str]]:
    """GOOD, then ``count`` commits; commit number ``culprit`` makes the allreduce 4x slower."""
    good = git_builder.commit("engine", {"bench.py": BENCH, ".github/perfbot.yml": CONFIG,
                                         "engine/__init__.py": "", "engine/pynccl.py": "SPINS = 200_000\n",
                                         "engine/server.py": "PORT = 1\n"})
    shas = []
    for number in range(count):
        if number == culprit:
            shas.append(git_builder.commit("Fix PCG MoE error", {"engine/pynccl.py": "SPINS = 800_000\n"}))
        else:
            shas.append(git_builder.commit(f"server tweak {number}", {"engine/server.py": f"PORT = {number + 2}\n"}))
    return good, shas


def bisect(capsys, git_builder, tmp_path, good, bad, *extra):
    # --python: the fingerprint asks a plain interpreter for package versions (quick), not this
    # test environment's, which would import torch for every run.
    code = main(["bisect", good, bad, "--repo", str(git_builder.root), "--suite", "spin",
                 "--rounds", "5", "--out", str(tmp_path / "runs"), "--format", "json", "--quiet",
                 "--python", PLAIN_PYTHON, *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


@pytest.mark.parametrize("culprit", [0, 5])
def test_bisect_finds_and_confirms_the_culprit_suspicious_commits_first(capsys, git_builder, tmp_path, culprit):
    good, shas = history(git_builder, culprit)
    code, report, _ = bisect(capsys, git_builder, tmp_path, good, shas[-1])
    first_probe = report["measurements"][1]
    assert first_probe["head"] in (shas[culprit], shas[culprit - 1] if culprit else good)
    assert code == 0, report
    assert report["culprit"]["sha"] == shas[culprit]
    assert report["culprit"]["subject"] == "Fix PCG MoE error"
    assert report["metric"] == "allreduce_ms"
    assert any("pynccl.py" in reason for reason in report["culprit"]["reasons"])
    confirm = report["measurements"][-1]
    assert confirm["purpose"] == "confirm" and confirm["outcome"] == "bad" and confirm["ratio"] > 2
    probes = report["runs"]["probes"]
    assert probes <= bisection.plain_probes(len(shas), culprit) + 1
    assert report["runs"]["plain_bisection_probes"] == bisection.plain_probes(len(shas), culprit)
    files = {m["results"] for m in report["measurements"]}
    assert {str(p) for p in (tmp_path / "runs").glob("*.json")} == files
    if culprit == 0:  # GOOD is the culprit's parent: its probe is the confirmation, not run twice
        assert len(files) == report["runs"]["total"] - 1


def test_a_range_without_a_regression_is_a_one_line_error(capsys, git_builder, tmp_path):
    good, shas = history(git_builder, culprit=99)
    code, report, err = bisect(capsys, git_builder, tmp_path, good, shas[-1])
    assert code == 2 and report is None
    assert err.startswith("perfbot: error: BAD is not measurably slower than GOOD") and err.count("\n") == 1


def test_an_unknown_metric_is_a_one_line_error(capsys, git_builder, tmp_path):
    good, shas = history(git_builder, 3)
    code, _, err = bisect(capsys, git_builder, tmp_path, good, shas[-1], "--metric", "nope")
    assert code == 2 and "metric 'nope' is not measured by this suite" in err and err.count("\n") == 1



def test_bisect_finds_the_seeded_culprit_of_the_sample_repository_on_cpu(capsys, tmp_path):
    """The sample's slow commit makes its communicator's allreduce copy out of place (and sync on
    GPUs); on CPU, one gloo rank and a 16 MiB tensor make that copy the whole cost."""
    importorskip("torch")
    manifest = sample_repo.build(tmp_path / "sample")
    config = tmp_path / "cpu.yml"
    config.write_text(f"version: 1\nbench:\n  warmup: 0\n  suites:\n    communicator:\n      kind: command\n"
                      f"      command: {sys.executable} {COMMUNICATOR_BENCH}\n")
    code = main(["bisect", manifest["first"], manifest["head"], "--repo", manifest["path"],
                 "--suite", "communicator", "--rounds", "5", "--config", str(config),
                 "--out", str(tmp_path / "runs"), "--format", "json", "--quiet", "--python", PLAIN_PYTHON])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["culprit"]["sha"] == manifest["slow"], report["measurements"]
    assert report["culprit"]["subject"] == sample_repo.SLOW_SUBJECT
    assert report["metric"] == "comm_allreduce_ms"
    assert report["measurements"][-1]["outcome"] == "bad" and report["measurements"][-1]["ratio"] > 5
    commits = [c["sha"] for c in manifest["commits"][1:]]
    assert report["runs"]["probes"] <= bisection.plain_probes(len(commits), commits.index(manifest["slow"]))


@pytest.mark.parametrize("option, value, message", [("--alpha", "5", "a probability between 0 and 1"),
                                                     ("--min-effect", "150", "a percentage from 0 to 100")])
def test_statistics_options_out_of_range_are_one_line_errors(capsys, option, value, message):
    code = main(["bisect", "a", "b", "--suite", "x", option, value])
    _, err = capsys.readouterr()
    assert code == 2 and message in err and err.count("\n") == 1
