"""`perfbot bisect` end to end on real repositories whose benchmark gets slower at one commit.

The benchmark's metric is a pure function of the checked-out commit (and the round number, for a
little spread), so these tests can fail only when the bisection's logic is wrong. One test times
a real allreduce on CPU: the sample repository's, end to end (slow).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import git
import pytest

from bot.cli.main import main
from bot.core.bisect import plan as bisection
from examples import sample_repo
from tests.support.missing import importorskip

PLAIN_PYTHON = shutil.which("python3") or sys.executable
COMMUNICATOR_BENCH = Path(__file__).parents[1] / "support" / "communicator_bench.py"

# The metric is what the commit's communicator sets, with a spread of at most 1% across rounds.
# With BISECT_RUNS_LOG set, each round also says where it ran: side, worktree, the setting.
BENCH = """\
import os
from engine.pynccl import SPINS
value = SPINS / 1000 * (1 + int(os.environ["PERFBOT_ROUND"]) % 3 * 0.005)
if os.environ.get("BISECT_RUNS_LOG"):
    with open(os.environ["BISECT_RUNS_LOG"], "a") as log:
        log.write(f"{os.environ['PERFBOT_SIDE']} {os.getcwd()} {SPINS}\\n")
print(f"PERFBOT_METRIC allreduce_ms={value} unit=ms better=lower")
"""
CONFIG = """\
version: 1
bench:
  warmup: 0
  pass_env: [BISECT_RUNS_LOG]
  suites:
    spin:
      kind: command
      command: python3 bench.py
"""


def history(
    git_builder, culprit: int, count: int = 8, bench: str = BENCH, config: str = CONFIG
) -> tuple[str, list[str]]:
    """GOOD, then ``count`` commits; commit number ``culprit`` makes the allreduce 4x slower."""
    good = git_builder.commit(
        "engine",
        {
            "bench.py": bench,
            ".github/perfbot.yml": config,
            "engine/__init__.py": "",
            "engine/pynccl.py": "SPINS = 200_000\n",
            "engine/server.py": "PORT = 1\n",
        },
    )
    shas = []
    for number in range(count):
        if number == culprit:
            shas.append(git_builder.commit("Fix PCG MoE error", {"engine/pynccl.py": "SPINS = 800_000\n"}))
        else:
            shas.append(
                git_builder.commit(f"server tweak {number}", {"engine/server.py": f"PORT = {number + 2}\n"})
            )
    return good, shas


def bisect(capsys, git_builder, tmp_path, good, bad, *extra, quiet=True):
    # --python: the fingerprint asks a plain interpreter for package versions (quick), not this
    # test environment's, which would import torch for every run.
    code = main(
        [
            "bisect",
            good,
            bad,
            "--repo",
            str(git_builder.root),
            "--suite",
            "spin",
            "--rounds",
            "5",
            "--out",
            str(tmp_path / "runs"),
            "--format",
            "json",
            "--python",
            PLAIN_PYTHON,
            *(["--quiet"] if quiet else []),
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


@pytest.fixture
def log(tmp_path, monkeypatch):
    """Where every round of the benchmark says where it ran."""
    path = tmp_path / "rounds.log"
    monkeypatch.setenv("BISECT_RUNS_LOG", str(path))
    return path


def rounds(log: Path) -> list[tuple[str, str, str]]:
    """(side, worktree, SPINS) of every round run so far."""
    return [tuple(line.split()) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("culprit", [0, 5])
def test_bisect_finds_and_confirms_the_culprit_suspicious_commits_first(
    capsys, git_builder, tmp_path, log, culprit
):
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
    # GOOD is checked out once, for every run against it; each run checks its other side out afresh.
    against_good = {m["results"] for m in report["measurements"] if m["base"] == good}
    good_trees = {tree for side, tree, _ in rounds(log) if side == "base" and Path(tree).name == "good"}
    assert len(good_trees) == 1
    assert sum(1 for _, tree, _ in rounds(log) if tree in good_trees) == 5 * len(against_good)
    assert len({tree for side, tree, _ in rounds(log) if side == "head"}) == len(files)
    assert not Path(*good_trees).exists()
    assert len(git_builder.git("worktree", "list").splitlines()) == 1


# A benchmark whose cheap code measures a noise floor with two modes, as the sample's allreduce on one
# gloo rank does on CPU (0.011 ms or 0.040 ms by process, values from its logged rounds), and whose
# slow commit costs 0.75 ms. Here every head side of the cheap code lands in the slow mode.
FLOOR_BENCH = """\
import os
from engine.pynccl import SPINS
side, round = os.environ["PERFBOT_SIDE"], int(os.environ["PERFBOT_ROUND"])
floor = 0.011 if side == "base" else 0.040
value = (0.75 if SPINS == 800_000 else floor) * (1 + round % 3 * 0.005)
print(f"PERFBOT_METRIC allreduce_ms={value} unit=ms better=lower")
"""


def test_a_probe_whose_sides_sit_in_two_modes_of_a_noise_floor_does_not_blame_its_commit(
    capsys, git_builder, tmp_path
):
    """The parent's probe is 3.6x slower than GOOD, significantly: two modes of a floor, not the
    68x regression from GOOD to BAD. It counts with the good side (it once blamed the parent)."""
    good, shas = history(git_builder, 5, bench=FLOOR_BENCH)
    code, report, _ = bisect(capsys, git_builder, tmp_path, good, shas[-1])
    assert code == 0 and report["culprit"]["sha"] == shas[5], report["measurements"]
    assert report["conclusion"].endswith("against its parent, confirmed")
    floor = [m for m in report["measurements"] if m["purpose"] == "probe" and m["head"] != shas[5]]
    assert floor and all(m["verdict"] == "regression" and m["outcome"] == "ok" for m in floor)
    assert all(3.5 < m["ratio"] < 3.7 for m in floor)
    assert any("short of halfway to BAD: counted ok" in note for note in report["notes"])


# The first time the cheap code runs on a head side it lands in a slow mode 3x above the floor (the
# machine was busy, say), which the rule above cannot tell from the 4x regression; later runs do not.
BUSY_ONCE_BENCH = """\
import os
from engine.pynccl import SPINS
state = os.environ["BISECT_STATE"]
busy = 1.0
if SPINS == 200_000 and os.environ["PERFBOT_SIDE"] == "head":
    with open(state, "a+") as seen:
        seen.seek(0)
        busy = 3.0 if len(seen.read()) < 5 else 1.0
        seen.write("x")
value = SPINS / 1000 * busy * (1 + int(os.environ["PERFBOT_ROUND"]) % 3 * 0.005)
print(f"PERFBOT_METRIC allreduce_ms={value} unit=ms better=lower")
"""


def test_a_confirmation_that_contradicts_the_probes_measures_them_again_and_finds_the_culprit(
    capsys, git_builder, tmp_path, monkeypatch
):
    monkeypatch.setenv("BISECT_STATE", str(tmp_path / "state"))
    config = CONFIG.replace("[BISECT_RUNS_LOG]", "[BISECT_STATE]")
    good, shas = history(git_builder, 5, bench=BUSY_ONCE_BENCH, config=config)
    code, report, _ = bisect(capsys, git_builder, tmp_path, good, shas[-1])
    assert code == 0 and report["culprit"]["sha"] == shas[5], report["measurements"]
    assert report["conclusion"].endswith("against its parent, confirmed")
    blamed = next(m for m in report["measurements"] if m["purpose"] == "probe" and m["head"] != shas[5])
    assert blamed["outcome"] == "bad" and blamed["ratio"] > 2  # the busy run
    purposes = [m["purpose"] for m in report["measurements"]]
    assert purposes.count("confirm") == 2 and purposes.count("recheck") == 1 and purposes[-1] == "confirm"
    recheck = report["measurements"][purposes.index("recheck")]
    assert (recheck["base"], recheck["outcome"]) == (good, "ok")
    contradicted = report["measurements"][purposes.index("confirm")]
    assert contradicted["head"] == recheck["head"] and contradicted["outcome"] == "ok"
    assert report["runs"]["rechecks"] == 1

    # A re-run into the same folder reuses every run, the recheck as a recheck.
    code, again, err = bisect(capsys, git_builder, tmp_path, good, shas[-1], quiet=False)
    assert (code, again) == (0, report)
    assert err.count("reusing") == len({m["results"] for m in report["measurements"]})


def test_a_benchmark_that_edits_its_checkout_stops_the_bisection_with_a_one_line_error(
    capsys, git_builder, tmp_path
):
    config = CONFIG.replace(
        "      command: python3 bench.py\n",
        "      command: python3 bench.py && echo '# edited' >> engine/server.py\n",
    )
    good, shas = history(git_builder, 5, config=config)
    code, _, err = bisect(capsys, git_builder, tmp_path, good, shas[-1])
    assert code == 2 and err.count("\n") == 1, err
    assert "tracked files of the worktree" in err and "differ from the commit after the rounds" in err
    assert not list((tmp_path / "runs").glob("*.json"))  # the run is not kept for reuse
    assert list((tmp_path / "runs").glob("*.unverified"))


def test_a_rerun_into_the_same_folder_reuses_its_runs_and_measures_only_what_is_missing(
    capsys, git_builder, tmp_path, log
):
    good, shas = history(git_builder, 5)
    code, first, _ = bisect(capsys, git_builder, tmp_path, good, shas[-1])
    assert code == 0
    measured = len(rounds(log))

    code, again, err = bisect(capsys, git_builder, tmp_path, good, shas[-1], quiet=False)
    assert (code, again) == (0, first)
    assert len(rounds(log)) == measured
    assert f"{first['runs']['total']} run(s) measured there before are reused" in err
    assert err.count("reusing") == first["runs"]["total"]

    # A run cut short (still "running") and a run whose file is gone are measured again, alone.
    confirm, probe = Path(first["measurements"][-1]["results"]), Path(first["measurements"][1]["results"])
    confirm.write_text(json.dumps({**json.loads(confirm.read_text()), "status": "running"}))
    probe.unlink()
    code, third, err = bisect(capsys, git_builder, tmp_path, good, shas[-1], quiet=False)
    assert (code, third) == (0, first)
    assert len(rounds(log)) == measured + 2 * 2 * 5
    assert err.count("reusing") == first["runs"]["total"] - 2


def test_a_folder_of_another_bisection_is_a_one_line_error_and_nothing_runs(
    capsys, git_builder, tmp_path, log
):
    good, shas = history(git_builder, culprit=99)
    code, report, _ = bisect(capsys, git_builder, tmp_path, good, shas[-1])  # the reference run alone
    assert code == 1 and report["status"] == "not_reproduced" and len(rounds(log)) == 10
    code, again, err = bisect(capsys, git_builder, tmp_path, good, shas[-1], quiet=False)  # reuses it
    assert (code, again) == (1, report) and "nothing to bisect" in err and len(rounds(log)) == 10
    for extra, difference in (
        (["--rounds", "3"], "max_rounds 5 there, 3 here; rounds 5 there, 3 here"),
        (["--metric", "allreduce_ms"], "metric (default) there, allreduce_ms here"),
    ):
        code, _, err = bisect(capsys, git_builder, tmp_path, good, shas[-1], *extra)
        assert code == 2 and err.count("\n") == 1, err
        assert f"runs holds the runs of another bisection ({difference})" in err
    code, _, err = bisect(capsys, git_builder, tmp_path, good, shas[-2])
    assert code == 2 and f"bad {shas[-1][:10]} there, {shas[-2][:10]} here" in err
    (tmp_path / "runs" / "bisect-settings.yml").write_text("- not\n- settings\n")
    code, _, err = bisect(capsys, git_builder, tmp_path, good, shas[-1])
    assert code == 2 and "bisect-settings.yml: not the settings of a bisection" in err
    assert len(rounds(log)) == 10


def test_an_output_folder_that_is_a_file_is_a_one_line_error(capsys, git_builder, tmp_path):
    good, shas = history(git_builder, 3)
    (tmp_path / "runs").write_text("")
    code, _, err = bisect(capsys, git_builder, tmp_path, good, shas[-1])
    assert code == 2 and "cannot use it as the output folder" in err and err.count("\n") == 1


def test_a_range_without_a_regression_is_reported_not_reproduced_with_both_fingerprints(
    capsys, git_builder, tmp_path
):
    """GOOD and BAD that no longer differ are an outcome (exit 1), not a usage error: no culprit, the
    reference run and each side's environment fingerprint kept, and the artifact written."""
    good, shas = history(git_builder, culprit=99)
    code, report, err = bisect(
        capsys, git_builder, tmp_path, good, shas[-1], "--artifact", str(tmp_path / "a")
    )
    assert code == 1 and err == "", err
    assert (report["schema"], report["status"], report["culprit"]) == (1, "not_reproduced", None)
    assert report["conclusion"].startswith("not reproduced in today's environment: allreduce_ms unchanged")
    assert report["reference"]["verdict"] == "unchanged" and report["metric"] == "allreduce_ms"
    assert [m["purpose"] for m in report["measurements"]] == ["reference"]
    good_print, bad_print = report["fingerprints"]["good"], report["fingerprints"]["bad"]
    assert good_print["cpu.cores"] == bad_print["cpu.cores"] and good_print["host.kernel"]
    assert not any(key.startswith(("git.", "taken_at")) for key in good_print)  # the commit, not the machine
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [
        "bisect.json",
        "reference.results.json",
        "summary.md",
    ]
    summary = (tmp_path / "a" / "summary.md").read_text()
    assert "not reproduced in today's environment" in summary and "| key | GOOD | BAD | differs |" in summary
    assert "| `cpu.cores` |" in summary and "(0 differ)" in summary
    main(
        [
            "bisect",
            good,
            shas[-1],
            "--repo",
            str(git_builder.root),
            "--suite",
            "spin",
            "--rounds",
            "5",
            "--out",
            str(tmp_path / "runs"),
            "--python",
            PLAIN_PYTHON,
            "--quiet",
        ]
    )
    text = capsys.readouterr().out
    assert "not reproduced in today's environment" in text and "fingerprints (GOOD | BAD)" in text
    assert "(* differs between GOOD and BAD)" in text
    assert any(line.split()[0] == "cpu.cores" for line in text.splitlines() if line.startswith("    "))


def test_an_unknown_metric_is_a_one_line_error(capsys, git_builder, tmp_path):
    good, shas = history(git_builder, 3)
    code, _, err = bisect(capsys, git_builder, tmp_path, good, shas[-1], "--metric", "nope")
    assert code == 2 and "metric 'nope' is not measured by this suite" in err and err.count("\n") == 1


@pytest.mark.slow
def test_bisect_finds_the_seeded_culprit_of_the_sample_repository_on_cpu(capsys, tmp_path, monkeypatch):
    """The sample's slow commit makes its communicator's allreduce copy out of place (and sync on
    GPUs); on CPU, one gloo rank and a 16 MiB tensor make that copy the whole cost."""
    importorskip("torch")
    manifest = sample_repo.build(tmp_path / "sample")
    imported = tmp_path / "imported.jsonl"
    monkeypatch.setenv("BISECT_RUNS_LOG", str(imported))
    config = tmp_path / "cpu.yml"
    config.write_text(
        f"version: 1\nbench:\n  warmup: 0\n  pass_env: [BISECT_RUNS_LOG]\n  suites:\n"
        f"    communicator:\n      kind: command\n"
        f"      command: {sys.executable} {COMMUNICATOR_BENCH}\n"
    )
    code = main(
        [
            "bisect",
            manifest["first"],
            manifest["head"],
            "--repo",
            manifest["path"],
            "--suite",
            "communicator",
            "--rounds",
            "5",
            "--config",
            str(config),
            "--out",
            str(tmp_path / "runs"),
            "--format",
            "json",
            "--quiet",
            "--python",
            PLAIN_PYTHON,
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["culprit"]["sha"] == manifest["slow"], report["measurements"]
    assert report["culprit"]["subject"] == sample_repo.SLOW_SUBJECT
    assert report["metric"] == "comm_allreduce_ms"
    assert report["measurements"][-1]["outcome"] == "bad" and report["measurements"][-1]["ratio"] > 5
    assert report["conclusion"].endswith("against its parent, confirmed")
    commits = [c["sha"] for c in manifest["commits"][1:]]
    assert report["runs"]["probes"] <= bisection.plain_probes(len(commits), commits.index(manifest["slow"]))
    # Every round imported the communicator from the worktree of the commit its run names.
    sample = git.Repo(manifest["path"])
    logged = [json.loads(line) for line in imported.read_text().splitlines()]
    runs = list({m["results"]: m for m in report["measurements"]}.values())
    assert len(logged) == 2 * 5 * len(runs)
    for number, run in enumerate(runs):
        for entry in logged[10 * number : 10 * (number + 1)]:
            sha = run[entry["side"]]
            assert entry["commit"] == sha, (run, entry)
            assert Path(entry["imported"]).is_relative_to(entry["cwd"])
            source = sample.git.show(f"{sha}:{Path(entry['imported']).relative_to(entry['cwd'])}")
            assert entry["digest"] == hashlib.sha256((source + "\n").encode()).hexdigest()


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--alpha", "5", "a probability between 0 and 1"),
        ("--min-effect", "150", "a percentage from 0 to 100"),
    ],
)
def test_statistics_options_out_of_range_are_one_line_errors(capsys, option, value, message):
    code = main(["bisect", "a", "b", "--suite", "x", option, value])
    _, err = capsys.readouterr()
    assert code == 2 and message in err and err.count("\n") == 1


def test_a_bisection_that_stops_on_an_error_still_leaves_its_report_in_the_artifact(
    capsys, git_builder, tmp_path
):
    """The action uploads what perfbot wrote: a bisection stopped by an error (here a suite the config
    does not have) leaves bisect.json with status error and the reason, its SHA-256 recorded."""
    good, shas = history(git_builder, 3)
    artifact, recorded = tmp_path / "artifact", tmp_path / "recorded"
    with recorded.open("w") as stream:
        code = main(
            [
                "bisect",
                good,
                shas[-1],
                "--repo",
                str(git_builder.root),
                "--suite",
                "nope",
                "--out",
                str(tmp_path / "runs"),
                "--artifact",
                str(artifact),
                "--python",
                PLAIN_PYTHON,
                "--github-output-fd",
                str(stream.fileno()),
                "--quiet",
            ]
        )
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "nope" in err, err
    assert sorted(p.name for p in artifact.iterdir()) == ["bisect.json", "summary.md"]
    report = json.loads((artifact / "bisect.json").read_text())
    assert (report["status"], report["culprit"], report["good"], report["bad"]) == (
        "error",
        None,
        good,
        shas[-1],
    )
    assert report["conclusion"].startswith("stopped: ") and "nope" in report["conclusion"]
    digest = hashlib.sha256((artifact / "bisect.json").read_bytes()).hexdigest()
    assert f"{digest}  bisect.json" in recorded.read_text().splitlines()


def test_a_reference_run_that_measured_nothing_is_reported_as_an_error(capsys, git_builder, tmp_path):
    """Every round of GOOD against BAD failed: an outcome (status error, exit 1), not a usage error,
    and nothing else is measured."""
    config = CONFIG.replace("      command: python3 bench.py\n", "      command: exit 3\n")
    good, shas = history(git_builder, 3, config=config)
    code, report, err = bisect(capsys, git_builder, tmp_path, good, shas[-1])
    assert code == 1 and err == "", err
    assert (report["status"], report["culprit"], report["reference"]["verdict"]) == ("error", None, "error")
    assert report["conclusion"].startswith("nothing measured: the reference run measured nothing usable")
    assert [m["purpose"] for m in report["measurements"]] == ["reference"]
