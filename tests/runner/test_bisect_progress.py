"""`perfbot bisect` says which metric it bisects on, and every probe's line names it: the suite's
headline when it regressed, even where another metric regressed more, unless --metric names one."""

from __future__ import annotations

import io
import shutil
import sys
from collections import Counter

from bot.core.config.schema import load as load_config
from bot.runner import adaptive, bench
from bot.runner.bisect import BisectOptions, bisect
from bot.runner.options import MeasureOptions
from bot.runner.progress import Progress

PLAIN_PYTHON = shutil.which("python3") or sys.executable
# cycle_ms (the headline by its name) doubles at the slow commit; other_ms grows fivefold.
BENCH = """\
import os
from engine import SLOW
r = int(os.environ["PERFBOT_ROUND"]) % 3 * 0.001
print(f"PERFBOT_METRIC cycle_ms={(2 if SLOW else 1) * (1 + r)} unit=ms better=lower")
print(f"PERFBOT_METRIC other_ms={(5 if SLOW else 1) * (1 + r)} unit=ms better=lower")
"""
CONFIG = "version: 1\nbench:\n  warmup: 0\n  suites:\n    two:\n      kind: command\n      command: python3 bench.py\n"


def run(git_builder, tmp_path, metric=None):
    good = git_builder.commit("engine", {"bench.py": BENCH, "engine/__init__.py": "SLOW = False\n"})
    git_builder.commit("docs", {"README": "x\n"})
    git_builder.commit("make it slow", {"engine/__init__.py": "SLOW = True\n"})
    bad = git_builder.commit("more docs", {"README": "y\n"})
    stream = io.StringIO()
    options = BisectOptions(
        good=good,
        bad=bad,
        suite="two",
        out=tmp_path / "runs",
        metric=metric,
        measure=MeasureOptions(repo=git_builder.root, rounds=3, python=PLAIN_PYTHON),
    )
    report = bisect(options, load_config(CONFIG), Progress(stream))
    return report, stream.getvalue()


def test_the_headline_is_bisected_on_and_named_in_every_probe_line(git_builder, tmp_path):
    report, progress = run(git_builder, tmp_path)
    assert report.metric == "cycle_ms" and report.culprit is not None
    assert "bisect: bisecting on cycle_ms (the headline), +100.0% from GOOD to BAD" in progress
    probes = [
        line
        for line in progress.splitlines()
        if line.startswith(("perfbot: bisect:   bad:", "perfbot: bisect:   ok:"))
    ]
    assert probes and all(": cycle_ms " in line for line in probes), probes


def test_a_named_metric_is_bisected_on_and_said_to_be_the_one_asked_for(git_builder, tmp_path):
    report, progress = run(git_builder, tmp_path, metric="other_ms")
    assert report.metric == "other_ms"
    assert "bisect: bisecting on other_ms (--metric), +400.0% from GOOD to BAD" in progress


def test_each_run_of_the_bisection_is_planned_once(git_builder, tmp_path, monkeypatch):
    """The suite a run's worktrees are checked with is the one it measures with: `bench.run` is
    given the run's plan, not left to make it again (repository, revisions, interpreter)."""
    planned, runs = Counter(), Counter()
    plan, run_bench = bench.plan, bench.run

    def counted_plan(options, config):
        planned[options.out.name] += 1
        return plan(options, config)

    def counted_run(options, *args, **kwargs):
        runs[options.out.name] += 1
        return run_bench(options, *args, **kwargs)

    monkeypatch.setattr(bench, "plan", counted_plan)
    monkeypatch.setattr(bench, "run", counted_run)
    report, _ = run(git_builder, tmp_path)
    assert report.culprit is not None
    assert any(name.startswith("probe-") for name in runs), runs  # the reference, probes, confirmation
    assert planned == runs + Counter({"unused.json": 1})  # and the settings, once, without a run


def test_a_bisection_s_runs_stop_at_the_run_s_level(git_builder, tmp_path, monkeypatch):
    """A probe's regression only steers the search: its run does not go on to the level at which
    one run opens a case on the default branch (a GPU bisect's probes would pay the rounds)."""
    levels = []
    ask = adaptive.should_continue

    def asked(*args, **kwargs):
        levels.append(kwargs.get("watch_level", True))
        return ask(*args, **kwargs)

    monkeypatch.setattr(adaptive, "should_continue", asked)
    report, _ = run(git_builder, tmp_path)
    assert report.culprit is not None and levels and not any(levels)
