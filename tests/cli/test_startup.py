"""The command line starts light: `perfbot --help` imports no verb's world, each verb only its own,
and the verbs listed up front are exactly the ones their modules define.

Which modules a command loads is read from `sys.modules` of a real `python -m bot` process as it
exits. Timings live in benchmarks/bench_cli_startup.py, not here.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.main import VERBS, main

ROOT = Path(__file__).resolve().parents[2]

HEAVY = ("scipy", "numpy", "pydantic", "git", "unidiff", "sqlalchemy", "flask", "github", "huey", "torch")
SERVER_SIDE = ("sqlalchemy", "flask", "github", "huey", "redis", "gunicorn")
# The only perfbot modules `--help` needs: the entry point and the argument parsing.
PARSING_ONLY = {"bot", "bot.__main__", "bot.errors", "bot.cli", "bot.cli.main", "bot.cli.parsing"}

DIFF = """\
diff --git a/vllm/distributed/device_communicators/pynccl.py b/vllm/distributed/device_communicators/pynccl.py
index 1111111..2222222 100644
--- a/vllm/distributed/device_communicators/pynccl.py
+++ b/vllm/distributed/device_communicators/pynccl.py
@@ -1,2 +1,3 @@ def all_reduce(self, x):
     y = x
+    torch.cuda.synchronize()
     return y
"""


MARK = "--- modules loaded:"
# Runs `python -m bot` as it is, then lists the modules on standard error as the process exits.
PROBE = f"""
import runpy, sys
try:
    runpy.run_module("bot", run_name="__main__", alter_sys=True)
finally:
    print({MARK!r}, *sorted(sys.modules), file=sys.stderr)
"""


def modules_loaded(*argv: str) -> set[str]:
    """Every module in `sys.modules` when a `python -m bot ARGV` process exits."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(done.stderr.rsplit(MARK, 1)[1].split())


def packages(names: set[str], roots: tuple[str, ...]) -> set[str]:
    return {root for root in roots for name in names if name == root or name.startswith(root + ".")}


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_load_no_verb_and_none_of_their_dependencies(flag):
    loaded = modules_loaded(flag)
    assert packages(loaded, HEAVY) == set()
    assert {name for name in loaded if name == "bot" or name.startswith("bot.")} <= PARSING_ONLY


def test_score_loads_neither_the_statistics_nor_the_server_side(tmp_path):
    diff = tmp_path / "change.diff"
    diff.write_text(DIFF)
    loaded = modules_loaded("score", str(diff))
    assert packages(loaded, ("scipy", "numpy", "torch", *SERVER_SIDE)) == set()
    assert "bot.cli.score" in loaded
    assert packages(loaded, ("bot.cli.bench", "bot.cli.compare", "bot.cli.serve")) == set()


@pytest.mark.parametrize("verb", ["bench", "bisect"])
def test_runner_verbs_load_nothing_of_the_server_side(verb):
    # GPU machines run `python -m bot bench|bisect` without the server's dependencies installed.
    loaded = modules_loaded(verb, "--help")
    assert f"bot.cli.{verb}" in loaded
    assert packages(loaded, SERVER_SIDE) == set()


def test_declared_verbs_are_exactly_those_their_modules_define_with_the_same_help():
    defined: dict[str, str | None] = {}
    for module in sorted({module for module, _ in VERBS.values()}):
        subparsers = argparse.ArgumentParser(prog="perfbot").add_subparsers()
        importlib.import_module(module).setup(subparsers)
        defined.update({choice.dest: choice.help for choice in subparsers._choices_actions})
    assert defined == {name: help for name, (_, help) in VERBS.items()}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_each_verb_help_is_the_full_help_of_its_module(verb, capsys):
    with pytest.raises(SystemExit) as raised:
        main([verb, "--help"])
    assert raised.value.code == 0
    module, _ = VERBS[verb]
    subparsers = argparse.ArgumentParser(prog="perfbot").add_subparsers()
    importlib.import_module(module).setup(subparsers)
    assert capsys.readouterr().out == subparsers.choices[verb].format_help()


def test_top_level_help_lists_every_verb_in_order(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    listed = [
        line.split()[0]
        for line in out.split("COMMAND\n", 1)[1].split("\n\n")[0].splitlines()
        if line.startswith("    ") and not line.startswith("     ")
    ]
    assert listed == list(VERBS)


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_score_without_a_checkout_loads_no_git_and_no_yaml(tmp_path, source):
    # GitPython is for --repo only, and a YAML parser for a config file only.
    diff = tmp_path / "change.diff"
    diff.write_text(DIFF)
    argv = ("score", str(diff)) if source == "file" else ("score", "-")
    if source == "stdin":
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *argv],
            cwd=ROOT,
            input=DIFF,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        loaded = set(done.stderr.rsplit(MARK, 1)[1].split())
    else:
        loaded = modules_loaded(*argv)
    assert packages(loaded, ("git", "gitdb", "yaml", "bot.adapters", "bot.runner")) == set()


def test_score_without_a_config_file_loads_no_pydantic(tmp_path):
    # The built-in profiles are plain data: the schema (pydantic) validates a config file, and only
    # when one is read.
    diff = tmp_path / "change.diff"
    diff.write_text(DIFF)
    assert packages(modules_loaded("score", str(diff)), ("pydantic", "pydantic_core")) == set()
    config = tmp_path / "perfbot.yml"
    config.write_text("risk: {profile: vllm}\n")
    assert {"pydantic", "bot.core.config.schema"} <= modules_loaded(
        "score", "--config", str(config), str(diff)
    )


def test_score_without_a_map_or_config_loads_neither_the_maps_machinery_nor_pathspec(tmp_path):
    # The built-in globs come translated (`glob_table`); the call graph and the map's model are
    # for --map only.
    diff = tmp_path / "change.diff"
    diff.write_text(DIFF)
    loaded = modules_loaded("score", str(diff))
    assert packages(loaded, ("pathspec", "bot.core.stepmap", "bot.core.risk.stepmap_scoring")) == set()
    assert packages(loaded, ("bot.core.risk.callgraph", "bot.core.risk.triage")) == set()


def test_deliver_needs_nothing_but_the_standard_library():
    loaded = modules_loaded("deliver", "--help")
    assert "bot.cli.deliver" in loaded
    assert packages(loaded, (*HEAVY, "requests", "yaml", "bot.core", "bot.adapters")) == set()
