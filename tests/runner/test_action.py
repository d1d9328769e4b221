"""The composite action's steps, run as GitHub runs them: inputs as environment, each script under bash."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.runner import fingerprint

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
BASH = shutil.which("bash")
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
CONFIG = "bench:\n  warmup: 0\n  suites:\n    quick:\n      kind: command\n      command: bash bench.sh\n"


class Runner:
    """Just enough of a GitHub Actions runner for a composite action: expressions, env, outputs, PATH."""

    def __init__(self, tmp_path: Path, inputs: dict[str, str]):
        defaults = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
        missing = [n for n, s in ACTION["inputs"].items() if s.get("required") and n not in inputs]
        assert not missing, f"required inputs not given: {missing}"
        self.inputs = {**defaults, **inputs}
        self.files = {name: tmp_path / name for name in ("output", "summary", "path", "env")}
        for file in self.files.values():
            file.write_text("")
        (tmp_path / "runner-temp").mkdir()
        self.temp = tmp_path / "runner-temp"
        self.steps: dict[str, dict[str, str]] = {}
        self.path = [str(Path(sys.executable).parent), *os.environ["PATH"].split(os.pathsep)]

    def evaluate(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.expression(m[1]), str(text))

    def expression(self, expression: str) -> str:
        if expression.startswith("inputs."):
            return self.inputs[expression.removeprefix("inputs.")]
        if expression == "github.action_path":
            return str(ROOT)
        if expression == "!cancelled()":
            return "true"
        step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
        if step:
            return self.steps.get(step[1], {}).get(step[2], "")
        raise AssertionError(f"action.yml uses an expression this test does not evaluate: {expression}")

    def env(self, step: dict) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("GITHUB_", "INPUT_"))}
        env.update({f"INPUT_{name.upper().replace('-', '_')}": value for name, value in self.inputs.items()})
        env.update(GITHUB_OUTPUT=str(self.files["output"]), GITHUB_STEP_SUMMARY=str(self.files["summary"]),
                   GITHUB_PATH=str(self.files["path"]), GITHUB_ENV=str(self.files["env"]),
                   GITHUB_ACTION_PATH=str(ROOT), RUNNER_TEMP=str(self.temp), PATH=os.pathsep.join(self.path))
        env.update({key: self.evaluate(value) for key, value in step.get("env", {}).items()})
        return env

    def run_step(self, step: dict) -> subprocess.CompletedProcess:
        assert step["shell"] == "bash"
        self.files["output"].write_text("")
        done = subprocess.run([BASH, "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                              env=self.env(step), capture_output=True, text=True, timeout=300)
        outputs = dict(line.split("=", 1) for line in self.files["output"].read_text().splitlines() if "=" in line)
        self.steps[step.get("id", step["name"])] = outputs
        self.path[:0] = reversed(self.files["path"].read_text().split())
        return done

    def run(self) -> tuple[list[subprocess.CompletedProcess], dict]:
        """Run the steps in order until one fails; return their results and the upload step's inputs."""
        done, upload, failed = [], None, False
        for step in ACTION["runs"]["steps"]:
            # After a failure GitHub runs only the steps whose condition asks for it.
            if failed and step.get("if") not in ("${{ !cancelled() }}", "${{ always() }}", "${{ failure() }}"):
                continue
            if "uses" in step:
                assert self.evaluate(step.get("if", "true")) == "true"
                upload = {"uses": step["uses"], **{k: self.evaluate(v) for k, v in step["with"].items()}}
                continue
            done.append(self.run_step(step))
            failed = failed or done[-1].returncode != 0
        return done, upload


@pytest.fixture
def target(git_builder, tmp_path, monkeypatch):
    monkeypatch.setattr(fingerprint, "python_stack", lambda python: {})
    bench_sh = 'echo "PERFBOT_METRIC step_ms=$(cat speed.txt) unit=ms better=lower"\n'
    base = git_builder.commit("base", {"bench.sh": bench_sh, "speed.txt": "10\n"})
    head = git_builder.commit("head", {"speed.txt": "12\n"})
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG)
    return {"repository-path": str(git_builder.root), "base-sha": base, "head-sha": head,
            "config": str(config), "suites": "quick", "rounds": "2", "install": "false"}


def test_the_action_benchmarks_uploads_the_results_and_writes_the_summary(target, tmp_path):
    runner = Runner(tmp_path, {**target, "correlation-id": "perfbot-7f3a.1"})
    steps, upload = runner.run()
    assert [s.returncode for s in steps] == [0, 0], steps[-1].stderr
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["name"] == "perfbot-results-perfbot-7f3a.1"
    assert upload["if-no-files-found"] == "error"
    results = json.loads((Path(upload["path"]) / "results.json").read_text())
    assert (results["base"]["sha"], results["head"]["sha"]) == (target["base-sha"], target["head-sha"])
    assert len(results["rounds"]) == 4 and all(r["ok"] for r in results["rounds"])
    assert "### perfbot bench: `quick`" in runner.files["summary"].read_text()


def test_several_suites_separated_by_commas_each_get_a_results_file(target, tmp_path):
    config = Path(target["config"])
    config.write_text(CONFIG + "    other:\n      kind: command\n      command: bash bench.sh\n")
    runner = Runner(tmp_path, {**target, "suites": "quick,other", "rounds": "1", "correlation-id": "c1"})
    steps, upload = runner.run()
    assert steps[-1].returncode == 0, steps[-1].stderr
    assert sorted(p.name for p in Path(upload["path"]).iterdir()) == ["results.other.json", "results.quick.json"]


def test_a_failing_benchmark_fails_the_step_and_still_leaves_results_to_upload(target, tmp_path):
    Path(target["config"]).write_text(CONFIG.replace("bash bench.sh", "exit 3"))
    runner = Runner(tmp_path, {**target, "correlation-id": "c2"})
    steps, upload = runner.run()
    assert steps[-1].returncode == 1
    assert "failed" in steps[-1].stderr
    assert json.loads((Path(upload["path"]) / "results.json").read_text())["status"] == "failed"


@pytest.mark.parametrize("correlation_id", ["x; touch pwned", "$(touch pwned)", "", "a/../../b"])
def test_a_correlation_id_that_is_not_a_plain_name_is_refused(target, tmp_path, correlation_id):
    runner = Runner(tmp_path, {**target, "correlation-id": correlation_id})
    steps, upload = runner.run()
    assert steps[-1].returncode == 2
    assert "correlation-id must be" in steps[-1].stdout
    assert upload["path"] == ""  # nothing to upload: the upload step fails on no files
    assert not (Path.cwd() / "pwned").exists() and not (tmp_path / "pwned").exists()


def test_without_install_perfbot_must_already_be_on_the_path(target, tmp_path):
    runner = Runner(tmp_path, {**target, "correlation-id": "c3"})
    runner.path = ["/nonexistent"]
    steps, _ = runner.run()
    assert steps[0].returncode == 1
    assert "perfbot is not on PATH" in steps[0].stdout


def test_every_script_reads_inputs_from_the_environment_only():
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), f"step '{step['name']}' pastes an expression into its script"
