"""A pull request cannot take over the runner: every hijack planted in the head checkout fails.

The head revision plants files that would run in place of perfbot's own tools if Python looked in
the checkout (``venv/__main__.py``, ``pip/__main__.py``, ``torch.py``, ``bot/...``), and a benchmark
that goes after the runner: it reads every environment it can reach for tokens, writes GitHub's file
commands, forges the results file and plants numbers for the base's rounds. Each planted file writes
a marker when it runs; no marker may appear, and the results stay what base and head measured.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bot.core.config.suite_kinds.verify_step import VerifyStepSuite
from bot.runner import fingerprint
from bot.runner.rounds import run_round
from bot.runner.suites.base import RoundContext, RoundId
from bot.runner.suites.verify_step import VerifyStepBench
from tests.runner.test_action import CONFIG, Runner, engine_python
from tests.support.missing import importorskip

TOKENS = {
    "GITHUB_TOKEN": "planted-github-token",
    "ACTIONS_RUNTIME_TOKEN": "planted-runtime-token",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "planted-oidc-token",
    "HF_TOKEN": "planted-hf-token",
}
HONEST_BENCH = 'echo "PERFBOT_METRIC step_ms=$(cat speed.txt) unit=ms better=lower"\n'


def marker_code(markers: Path, name: str) -> str:
    """Python that leaves a marker named ``name`` when it runs."""
    return f"open({str(markers / name)!r}, 'w').write('ran')\n"


def planted_modules(markers: Path) -> dict[str, str]:
    """Files that would stand in for perfbot's tools if Python imported from the checkout."""
    return {
        "venv/__init__.py": "",
        "venv/__main__.py": marker_code(markers, "venv"),
        "pip/__init__.py": "",
        "pip/__main__.py": marker_code(markers, "pip"),
        "torch.py": marker_code(markers, "torch"),
        "bot/__init__.py": marker_code(markers, "bot"),
        "bot/__main__.py": marker_code(markers, "bot-main"),
        "bot/runner/__init__.py": marker_code(markers, "bot-runner"),
        "bot/runner/suites/verify_step_workload.py": marker_code(markers, "verify_step_workload"),
    }


def attacking_bench(markers: Path, results: Path) -> str:
    """The head's benchmark: measures itself honestly, then goes after everything it can reach."""
    forged = json.dumps({"schema": "perfbot.results/1", "suite": "quick", "forged": True})
    fast = json.dumps({"step_ms": {"value": 0.001, "unit": "ms", "better": "lower"}})
    return (
        HONEST_BENCH
        + f"""
{{ env; for pid in $PPID $(ps -o ppid= -p $PPID); do tr '\\0' '\\n' < /proc/$pid/environ; done; }} \\
    >> {markers}/reachable-env 2>/dev/null
env >> {markers}/own-env
for name in GITHUB_OUTPUT GITHUB_ENV GITHUB_PATH GITHUB_STEP_SUMMARY; do
  file=$(printenv "$name") && echo "verdict=improvement" >> "$file"
done
echo '{forged}' > {results}
for folder in "$PERFBOT_OUT_DIR"/../*/ "$PERFBOT_OUT_DIR"/../base-{{0..9}}/; do
  if [ "$(cd "$folder" 2>/dev/null && pwd)" != "$PERFBOT_OUT_DIR" ]; then
    mkdir -p "$folder" && echo '{fast}' > "$folder/metrics.json"
  fi
done
"""
    )


@pytest.fixture
def hijacked(git_builder, tmp_path):
    """A repository whose head commit plants every hijack; checked out at head, as the workflow does."""
    markers = tmp_path / "markers"
    markers.mkdir()
    runner_temp = tmp_path / "action" / "runner-temp"
    results = runner_temp / "perfbot-results" / "hijack" / "results.json"
    base = git_builder.commit("base", {"bench.sh": HONEST_BENCH, "speed.txt": "10\n"})
    head = git_builder.commit(
        "head: plants",
        {"speed.txt": "12\n", "bench.sh": attacking_bench(markers, results), **planted_modules(markers)},
    )
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG)
    return {
        "repository-path": str(git_builder.root),
        "base-sha": base,
        "head-sha": head,
        "config": str(config),
        "suites": "quick",
        "rounds": "5",
        "correlation-id": "hijack",
    }, markers


def run_action(hijacked, tmp_path, **inputs):
    target, markers = hijacked
    (tmp_path / "action").mkdir()
    runner = Runner(tmp_path / "action", {**target, **inputs}, secrets=TOKENS)
    assert runner.temp == tmp_path / "action" / "runner-temp"
    steps, upload = runner.run()
    return runner, steps, upload, markers


def assert_nothing_was_hijacked(runner, steps, upload, markers):
    assert {name: s.returncode for name, s in steps.items()} == {
        "install": 0,
        "bench": 0,
        "report": 0,
        "Fail on the verdict": 0,
    }, steps["bench"].stderr
    # The benchmark ran (it read the environments it could reach), and none of the planted files did.
    assert (markers / "reachable-env").exists()
    assert sorted(p.name for p in markers.iterdir()) == ["own-env", "reachable-env"]
    # Neither in its own environment nor in perfbot's (through /proc) did it find a runner token or
    # file command; a secret the job was given stays out of its own environment.
    reachable, own = (markers / "reachable-env").read_text(), (markers / "own-env").read_text()
    for name in ("GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"):
        assert TOKENS[name] not in reachable
    assert TOKENS["HF_TOKEN"] not in own
    for name in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY", "RUNNER_TEMP"):
        assert f"{name}=" not in reachable
    # The one runner variable it has: the id by which the runner ends, after the job, what it left.
    assert f"RUNNER_TRACKING_ID={runner.tracking_id}\n" in own
    # GitHub's files hold only what the action wrote.
    assert runner.files["env"].read_text() == runner.files["path"].read_text() == ""
    assert "improvement" not in runner.files["summary"].read_text().split("###")[0]
    assert runner.outputs()["verdict"] == "regression"  # 10 ms against 12: head is slower
    # The results are perfbot's, from what base and head measured themselves.
    results = json.loads((Path(upload["path"]) / "results.json").read_text())
    assert "forged" not in results
    assert len(results["rounds"]) == 10 and all(r["ok"] for r in results["rounds"])
    assert {r["side"]: r["metrics"]["step_ms"] for r in results["rounds"]} == {"base": 10, "head": 12}


def test_a_pull_request_cannot_hijack_perfbot_the_runner_or_the_results(hijacked, tmp_path):
    runner, steps, upload, markers = run_action(
        hijacked, tmp_path, install="false", **{"engine-python": str(engine_python(tmp_path))}
    )
    assert_nothing_was_hijacked(runner, steps, upload, markers)


@pytest.mark.slow
def test_the_installed_perfbot_is_its_own_venv_made_and_filled_by_the_real_venv_and_pip(hijacked, tmp_path):
    """The install step from the checkout, as on a real runner: a venv of its own, without the
    system's site packages or torch, made by the real `venv` and `pip`, then the same run."""
    runner, steps, upload, markers = run_action(
        hijacked,
        tmp_path,
        install="true",
        python=sys.executable,
        **{"engine-python": str(engine_python(tmp_path))},
    )
    venv = Path(runner.steps["install"]["perfbot"]).parent.parent
    assert venv == runner.temp / "perfbot-venv"  # the job's own: none kept for later jobs
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    assert not list(venv.glob("lib/python*/site-packages/torch"))
    assert_nothing_was_hijacked(runner, steps, upload, markers)


def test_the_fingerprint_asks_the_engine_for_versions_without_importing_the_checkout(tmp_path, monkeypatch):
    importorskip("torch")
    markers = tmp_path / "markers"
    markers.mkdir()
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "torch.py").write_text(marker_code(markers, "torch"))
    monkeypatch.chdir(checkout)
    stack = fingerprint.python_stack(sys.executable)
    assert stack["torch"]["version"] == __import__("torch").__version__
    assert not list(markers.iterdir())


def test_a_verify_step_round_runs_perfbot_s_benchmark_and_the_real_torch(tmp_path):
    importorskip("torch")
    markers = tmp_path / "markers"
    markers.mkdir()
    worktree = tmp_path / "worktree"
    for name, text in planted_modules(markers).items():
        (worktree / name).parent.mkdir(parents=True, exist_ok=True)
        (worktree / name).write_text(text)
    suite = VerifyStepBench(
        "verify-step",
        VerifyStepSuite(
            kind="verify-step", device="cpu", world_size=1, iters=2, warmup_iters=0, python=sys.executable
        ),
    )
    result = run_round(
        suite, RoundContext(worktree, tmp_path / "round", "head", RoundId("counted", 0)), timeout=240
    )
    assert result.ok, result.error
    assert "verify_eager_ms" in result.metrics
    assert not list(markers.iterdir())
