"""The code under test cannot choose the verdict by changing the other side's code.

Base and head are two worktrees side by side, and both sides run the same engine's interpreter. A
review reproduced it: during its own (warm-up) round the head rewrote the base's worktree next to
it (a changed source file, a forged ``__pycache__`` file whose header matches the source's mtime and
size, a package that shadows a module) or planted a start-up hook (``.pth``, ``sitecustomize``) in
the engine's site-packages, and every measured base round ran the poisoned code: a head 20% slower
was reported as an improvement. Now the other side's worktree and the engine's import path are
read-only to a round where a mount namespace is available, and everywhere each side's tree is checked
before every round, and the engine's import path before every round where it cannot be made read-only
(after the set-up and at the end everywhere): a change ends the run with an ``error`` verdict that
names the side and the path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.core.config.suite_kinds.command import CommandSuite
from bot.runner import scope
from bot.runner.bench import serving, stop_workers, take_turn
from bot.runner.integrity import Guard
from bot.runner.progress import Progress
from bot.runner.scope import STRATEGY_VARIABLE
from bot.runner.suites.base import Command, RoundContext
from bot.runner.suites.command import CommandBench
from tests.runner.test_action import Runner

from .processes import SCOPES

CONFIG = "bench:\n  warmup: 1\n  suites:\n    quick:\n      kind: command\n      command: bash bench.sh\n"
BENCH_PY = "import work\nprint(f'PERFBOT_METRIC step_ms={work.SPEED} unit=ms better=lower')\n"
HONEST = "python bench.py\n"

# What the head's warm-up does to the base: each attack makes base's `work.SPEED` 20 (head's is 12).
ATTACK = r"""
import importlib._bootstrap_external as external, importlib.util, os, sys
from pathlib import Path
how, markers = sys.argv[1], Path(sys.argv[2])
base = Path.cwd().parent / "base"  # a round and a set-up both start in their side's worktree
def site_packages():
    return next(p for p in map(Path, sys.path) if p.name == "site-packages" and str(p).startswith(sys.prefix))
try:
    if how == "source":  # the same size, a new mtime
        (base / "work.py").write_text("SPEED = 20\n")
        later = (base / "work.py").stat().st_mtime + 5  # a .pyc of the old one is stale even within a second
        os.utime(base / "work.py", (later, later))
    elif how == "bytecode":  # what Python checks of a .pyc: the source's mtime and size
        source = base / "work.py"
        stat = source.stat()
        code = compile("SPEED = 20\n", str(source), "exec")
        cached = Path(importlib.util.cache_from_source(str(source)))
        cached.parent.mkdir(exist_ok=True)
        cached.write_bytes(external._code_to_timestamp_pyc(code, stat.st_mtime, stat.st_size))
    elif how == "package":  # a package is found before a module of the same name
        (base / "work").mkdir()
        (base / "work" / "__init__.py").write_text("SPEED = 20\n")
    elif how == "pth":  # run by every interpreter of the engine at start-up; poisons the base only
        (site_packages() / "zz-perfbot-attack.pth").write_text(
            "import os, sys; os.environ.get('PERFBOT_SIDE') == 'base' and "
            "sys.modules.setdefault('work', type(sys)('work')).__dict__.update(SPEED=20)\n")
    elif how == "sitecustomize":
        (site_packages() / "sitecustomize.py").write_text(
            "import os, sys\nif os.environ.get('PERFBOT_SIDE') == 'base':\n"
            "    sys.modules['work'] = type(sys)('work')\n    sys.modules['work'].SPEED = 20\n")
except OSError as error:
    (markers / "denied").write_text(f"{type(error).__name__}: {error}")
else:
    (markers / "wrote").write_text(how)
"""

IN_TREE = {"source": "work.py", "bytecode": "__pycache__/work.", "package": "work"}
IN_ENGINE = {"pth": "zz-perfbot-attack.pth", "sitecustomize": "sitecustomize.py"}


def engine(tmp_path: Path) -> Path:
    """The engine's interpreter: a virtual environment of its own (its site-packages the tests may
    poison), without pip, made from the Python that runs the tests."""
    folder = tmp_path / "engine-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return folder / "bin" / "python"


def poisoning_head(git_builder, tmp_path, how: str, python: Path) -> tuple[Runner, Path]:
    markers = tmp_path / "markers"
    markers.mkdir()
    (tmp_path / "action").mkdir()
    base = git_builder.commit("base", {"bench.sh": HONEST, "bench.py": BENCH_PY, "work.py": "SPEED = 10\n"})
    head = git_builder.commit(
        "head: 20% slower, and poisons the base",
        {
            "work.py": "SPEED = 12\n",
            "attack.py": ATTACK,
            "bench.sh": f'if [ "$PERFBOT_ROUND" -lt 0 ]; then python attack.py {how} {markers}; fi\n'
            + HONEST,
        },
    )
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG)
    runner = Runner(
        tmp_path / "action",
        {
            "repository-path": str(git_builder.root),
            "base-sha": base,
            "head-sha": head,
            "config": str(config),
            "suites": "quick",
            "rounds": "5",
            "correlation-id": f"poison-{how}",
            "install": "false",
            "engine-python": str(python),
        },
    )
    return runner, markers


def measured(upload: dict) -> dict[str, set[float]]:
    results = json.loads((Path(upload["path"]) / "results.json").read_text())
    found: dict[str, set[float]] = {}
    for round_ in results["rounds"]:
        found.setdefault(round_["side"], set()).update(round_["metrics"].values())
    return found


def denied_and_honest(runner: Runner, markers: Path, steps: dict, upload: dict) -> None:
    """The attack's write was refused, and the run measured each side's own code: the regression."""
    assert "Read-only file system" in (markers / "denied").read_text()
    assert steps["bench"].returncode == 0, steps["bench"].stderr
    assert measured(upload) == {"base": {10}, "head": {12}}
    assert runner.outputs()["verdict"] == "regression"


@pytest.mark.parametrize("how", sorted(IN_TREE))
@pytest.mark.parametrize("strategy", SCOPES)
def test_a_head_that_rewrites_the_base_worktree_never_gets_a_verdict(
    git_builder, tmp_path, monkeypatch, how, strategy
):
    monkeypatch.setenv(STRATEGY_VARIABLE, strategy)
    runner, markers = poisoning_head(git_builder, tmp_path, how, engine(tmp_path))
    steps, upload = runner.run()
    if strategy == "pid-namespace":
        # The base's worktree is read-only to the head's processes: the attack fails, the run is honest.
        denied_and_honest(runner, markers, steps, upload)
        return
    # Without a mount namespace the write succeeds; the base's next round finds its tree changed.
    assert (markers / "wrote").read_text() == how
    assert steps["bench"].returncode == 1
    assert "the base worktree changed between its rounds" in steps["bench"].stderr
    assert IN_TREE[how] in steps["bench"].stderr
    results = json.loads((Path(upload["path"]) / "results.json").read_text())
    assert results["status"] == "failed"
    assert "the base worktree changed" in results["error"] and IN_TREE[how] in results["error"]
    assert not any(r["ok"] for r in results["rounds"])  # nothing measured in the run is trusted
    assert runner.outputs()["verdict"] == "error"


@pytest.mark.parametrize("how", sorted(IN_ENGINE))
@pytest.mark.parametrize("strategy", SCOPES)
def test_a_head_that_plants_a_start_up_hook_in_the_engine_never_gets_a_verdict(
    git_builder, tmp_path, monkeypatch, how, strategy
):
    monkeypatch.setenv(STRATEGY_VARIABLE, strategy)
    runner, markers = poisoning_head(git_builder, tmp_path, how, engine(tmp_path))
    steps, upload = runner.run()
    if strategy == "pid-namespace":
        # The engine's import path is read-only to the rounds: the hook is never planted, and the
        # run is honest (its import path is walked after the set-up and at the end, not per round).
        denied_and_honest(runner, markers, steps, upload)
        return
    # Without a mount namespace the hook is planted; the next round's check of the import path sees it.
    assert (markers / "wrote").read_text() == how
    assert steps["bench"].returncode == 1
    assert "the engine's import path changed" in steps["bench"].stderr
    assert IN_ENGINE[how] in steps["bench"].stderr, steps["bench"].stderr
    results = json.loads((Path(upload["path"]) / "results.json").read_text())
    assert results["status"] == "failed" and IN_ENGINE[how] in results["error"]
    assert not any(r["ok"] for r in results["rounds"])
    assert runner.outputs()["verdict"] == "error"


@pytest.mark.parametrize("strategy", SCOPES)
def test_a_head_whose_set_up_rewrites_the_base_never_gets_a_verdict(
    git_builder, tmp_path, monkeypatch, strategy
):
    """The set-up runs the head's code too (``pip install -e .`` runs its build): it gets the same
    read-only base, and the base's first round checks its tree against what its own set-up left."""
    monkeypatch.setenv(STRATEGY_VARIABLE, strategy)
    markers = tmp_path / "markers"
    markers.mkdir()
    (tmp_path / "action").mkdir()
    base = git_builder.commit(
        "base", {"bench.sh": HONEST, "bench.py": BENCH_PY, "work.py": "SPEED = 10\n", "setup.sh": "true\n"}
    )
    head = git_builder.commit(
        "head",
        {"work.py": "SPEED = 12\n", "attack.py": ATTACK, "setup.sh": f"python attack.py source {markers}\n"},
    )
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG.replace("warmup: 1", "warmup: 0") + "      setup: bash setup.sh\n")
    runner = Runner(
        tmp_path / "action",
        {
            "repository-path": str(git_builder.root),
            "base-sha": base,
            "head-sha": head,
            "config": str(config),
            "suites": "quick",
            "rounds": "5",
            "correlation-id": "setup",
            "install": "false",
            "engine-python": str(engine(tmp_path)),
        },
    )
    steps, upload = runner.run()
    if strategy == "pid-namespace":
        assert "Read-only file system" in (markers / "denied").read_text()
        assert runner.outputs()["verdict"] == "regression", steps["bench"].stderr
        return
    assert (markers / "wrote").read_text() == "source"
    assert (
        "the base worktree changed between its rounds, after a round of head: changed work.py"
        in steps["bench"].stderr
    )
    assert runner.outputs()["verdict"] == "error"


def test_a_set_up_may_install_into_the_engine(git_builder, tmp_path):
    """What a set-up writes into the engine's import path (an editable install's ``.pth``) is the
    reference the rounds are checked against, not a change."""
    (tmp_path / "action").mkdir()
    install = (
        "python -c 'import os, sysconfig; "
        'open(os.path.join(sysconfig.get_paths()["purelib"], os.path.basename(os.getcwd()) + ".pth"), '
        '"w").write(os.getcwd())\'\n'
    )
    base = git_builder.commit(
        "base", {"bench.sh": HONEST, "bench.py": BENCH_PY, "work.py": "SPEED = 10\n", "setup.sh": install}
    )
    head = git_builder.commit("head", {"work.py": "SPEED = 12\n"})
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG + "      setup: bash setup.sh\n")
    python = engine(tmp_path)
    runner = Runner(
        tmp_path / "action",
        {
            "repository-path": str(git_builder.root),
            "base-sha": base,
            "head-sha": head,
            "config": str(config),
            "suites": "quick",
            "rounds": "5",
            "correlation-id": "install",
            "install": "false",
            "engine-python": str(python),
        },
    )
    steps, upload = runner.run()
    assert steps["bench"].returncode == 0, steps["bench"].stderr
    assert sorted(p.name for p in python.parent.parent.glob("lib/python3*/site-packages/*.pth")) == [
        "base.pth",
        "head.pth",
    ]
    assert runner.outputs()["verdict"] == "regression"


def test_an_honest_run_with_the_checks_is_judged_as_before(git_builder, tmp_path):
    """The checks see what a round writes into its own tree (``__pycache__``) and the engine's new
    ``.pyc`` files, and refuse neither."""
    (tmp_path / "action").mkdir()
    base = git_builder.commit("base", {"bench.sh": HONEST, "bench.py": BENCH_PY, "work.py": "SPEED = 10\n"})
    head = git_builder.commit("head", {"work.py": "SPEED = 12\n"})
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG)
    runner = Runner(
        tmp_path / "action",
        {
            "repository-path": str(git_builder.root),
            "base-sha": base,
            "head-sha": head,
            "config": str(config),
            "suites": "quick",
            "rounds": "5",
            "correlation-id": "honest",
            "install": "false",
            "engine-python": str(engine(tmp_path)),
        },
    )
    steps, upload = runner.run()
    assert steps["bench"].returncode == 0, steps["bench"].stderr
    assert measured(upload) == {"base": {10}, "head": {12}}
    assert runner.outputs()["verdict"] == "regression"


class Serving(CommandBench):
    """A command suite with a worker that waits for requests: a process of its side that lives on
    between its rounds."""

    def worker_command(self, context: RoundContext) -> Command | None:
        return Command("worker", (sys.executable, "-c", "import sys\nfor line in sys.stdin:\n    pass\n"))


@pytest.mark.parametrize("strategy", SCOPES)
def test_a_worker_lives_through_the_other_side_s_round_only_where_that_tree_is_read_only(
    tmp_path, monkeypatch, strategy
):
    monkeypatch.setenv(STRATEGY_VARIABLE, strategy)
    trees = {side: tmp_path / side for side in ("base", "head")}
    for tree in trees.values():
        tree.mkdir()
    guard = Guard(trees)
    suite = Serving("quick", CommandSuite(kind="command", command="true"))
    workers: dict = {}
    head = serving(workers, suite, guard, tmp_path, "head", Progress(enabled=False))
    assert head is not None and head.alive
    try:
        take_turn(guard, workers, "base")
        if scope.strategy().read_only:  # the base's tree is read-only to it: it may stay
            assert workers == {"head": head} and head.alive
        else:  # it could write the base's tree during the base's round: stopped, started again on use
            assert workers == {} and not head.alive
    finally:
        stop_workers(workers)
        head.stop()
