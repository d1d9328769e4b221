"""A command suite's profiled pass whose trace an engine's own profiler wrote with Python stacks gives
the per-step map of the side's commit, named by the side's worktree (`bot.runner.trace_map`): the
map the results file carries, which the App stores from a default-branch run."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from bot.core.config.suite_kinds.command import CommandSuite
from bot.runner import profiling
from bot.runner.suites.base import PROFILED_PASS, RoundContext
from bot.runner.suites.command import CommandBench

ENGINE = Path(__file__).resolve().parent / "trace_engine"
COPY = f"""\
import os, shutil
shutil.copy({str(ENGINE / "trace.json.gz")!r}, os.path.join(os.environ["PERFBOT_PROFILE_DIR"], "server.trace.json.gz"))
"""


def test_a_command_suites_profiled_pass_maps_the_engines_own_trace_by_its_worktree(tmp_path):
    worktree = tmp_path / "worktree"
    shutil.copytree(ENGINE / "engine", worktree / "engine")
    (tmp_path / "copy.py").write_text(COPY)
    suite = CommandBench(
        "server",
        CommandSuite(
            kind="command", command="true", profile_command=f"{sys.executable} {tmp_path / 'copy.py'}"
        ),
    )
    outcome = profiling.profile_side(
        suite, RoundContext(worktree, tmp_path / "pass", "base", PROFILED_PASS), 60, "c" * 40
    )
    assert outcome.error is None and outcome.profile is not None and outcome.profile.steps == 3
    assert outcome.step_map is not None
    assert (outcome.step_map.commit, outcome.step_map.suite) == ("c" * 40, "server")
    assert ("engine/distributed/parallel_state.py", "tensor_model_parallel_all_reduce") in {
        (f.path, f.function) for f in outcome.step_map.functions
    }


def test_a_trace_of_no_worktree_file_gives_the_profile_and_no_map(tmp_path):
    (tmp_path / "copy.py").write_text(COPY)
    suite = CommandBench(
        "server",
        CommandSuite(
            kind="command", command="true", profile_command=f"{sys.executable} {tmp_path / 'copy.py'}"
        ),
    )
    (tmp_path / "empty").mkdir()
    outcome = profiling.profile_side(
        suite, RoundContext(tmp_path / "empty", tmp_path / "pass", "base", PROFILED_PASS), 60, "c" * 40
    )
    assert outcome.profile is not None and outcome.step_map is None
