"""The composite action's steps, run as GitHub runs them: inputs as environment, each script under bash."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from tests.test_install_roles import read_lock

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
BASH = shutil.which("bash")
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
CONFIG = "bench:\n  warmup: 0\n  suites:\n    quick:\n      kind: command\n      command: bash bench.sh\n"


class Runner:
    """Just enough of a GitHub Actions runner for a composite action: expressions, env, outputs, PATH."""

    def __init__(
        self,
        tmp_path: Path,
        inputs: dict[str, str],
        secrets: dict[str, str] | None = None,
        action_path: Path = ROOT,
    ):
        defaults = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
        missing = [n for n, s in ACTION["inputs"].items() if s.get("required") and n not in inputs]
        assert not missing, f"required inputs not given: {missing}"
        self.inputs = {**defaults, **inputs}
        self.files = {name: tmp_path / name for name in ("output", "summary", "path", "env")}
        for file in self.files.values():
            file.write_text("")
        (tmp_path / "runner-temp").mkdir()
        self.temp = tmp_path / "runner-temp"
        self.tool_cache = tmp_path / "tool-cache"
        # The id by which the runner finds, after the job, the processes the job left behind.
        self.tracking_id = f"github_{os.urandom(8).hex()}"
        self.steps: dict[str, dict[str, str]] = {}
        self.path = [str(Path(sys.executable).parent), *os.environ["PATH"].split(os.pathsep)]
        # GitHub starts every step in the workspace: the checkout under test.
        self.workspace = Path(self.inputs["repository-path"])
        self.secrets = secrets or {}
        self.action_path = action_path

    def evaluate(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.expression(m[1]), str(text))

    def expression(self, expression: str) -> str:
        if expression.startswith("inputs."):
            return self.inputs[expression.removeprefix("inputs.")]
        if expression == "github.action_path":
            return str(self.action_path)
        if expression == "!cancelled()":
            return "true"
        step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
        if step:
            return self.steps.get(step[1], {}).get(step[2], "")
        raise AssertionError(f"action.yml uses an expression this test does not evaluate: {expression}")

    def env(self, step: dict) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("GITHUB_", "INPUT_"))}
        env.update({f"INPUT_{name.upper().replace('-', '_')}": value for name, value in self.inputs.items()})
        env.update(
            GITHUB_OUTPUT=str(self.files["output"]),
            GITHUB_STEP_SUMMARY=str(self.files["summary"]),
            GITHUB_PATH=str(self.files["path"]),
            GITHUB_ENV=str(self.files["env"]),
            GITHUB_ACTION_PATH=str(self.action_path),
            RUNNER_TEMP=str(self.temp),
            RUNNER_TOOL_CACHE=str(self.tool_cache),
            RUNNER_TRACKING_ID=self.tracking_id,
            PATH=os.pathsep.join(self.path),
        )
        env.update(self.secrets)
        env.update({key: self.evaluate(value) for key, value in step.get("env", {}).items()})
        return env

    def run_step(self, step: dict) -> subprocess.CompletedProcess:
        assert step["shell"] == "bash"
        self.files["output"].write_text("")
        done = subprocess.run(
            [BASH, "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            env=self.env(step),
            capture_output=True,
            text=True,
            timeout=600,
            cwd=self.workspace,
        )
        self.steps[step.get("id", step["name"])] = parse_outputs(self.files["output"].read_text())
        self.path[:0] = reversed(self.files["path"].read_text().split())
        return done

    def run(self, after_step=None) -> tuple[dict[str, subprocess.CompletedProcess], dict]:
        """Run the steps in order as GitHub does after a failure; return the results of those that ran
        (by id, else name) and the upload step's inputs. ``after_step(id)``: called after each step
        that ran (what else could happen on the machine between two steps)."""
        done, upload, failed = {}, None, False
        for step in ACTION["runs"]["steps"]:
            # After a failure GitHub runs only the steps whose condition asks for it.
            if failed and step.get("if") not in (
                "${{ !cancelled() }}",
                "${{ always() }}",
                "${{ failure() }}",
            ):
                continue
            if "uses" in step:
                assert self.evaluate(step.get("if", "true")) == "true"
                upload = {"uses": step["uses"], **{k: self.evaluate(v) for k, v in step["with"].items()}}
                continue
            result = done[step.get("id", step["name"])] = self.run_step(step)
            failed = failed or result.returncode != 0
            if after_step is not None:
                after_step(step.get("id", step["name"]))
        return done, upload

    def outputs(self) -> dict[str, str]:
        """The action's outputs, from its steps' outputs."""
        return {name: self.evaluate(spec["value"]) for name, spec in ACTION["outputs"].items()}


def parse_outputs(text: str) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as the runner reads it: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    outputs, lines = {}, iter(text.splitlines())
    for line in lines:
        name, heredoc, delimiter = line.partition("<<")
        if heredoc and "=" not in name:
            block = []
            for inner in lines:
                if inner == delimiter:
                    break
                block.append(inner)
            else:
                raise AssertionError(f"output {name}: no closing delimiter {delimiter!r}")
            outputs[name] = "\n".join(block)
        elif "=" in line:
            key, _, value = line.partition("=")
            outputs[key] = value
    return outputs


def engine_python(folder: Path) -> Path:
    """A stand-in for the engine's interpreter: answers the fingerprint's probe with nothing at once
    (importing torch would take seconds per test, and these suites are shell scripts)."""
    python = folder / "engine" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    return python


@pytest.fixture
def target(git_builder, tmp_path):
    bench_sh = 'echo "PERFBOT_METRIC step_ms=$(cat speed.txt) unit=ms better=lower"\n'
    base = git_builder.commit("base", {"bench.sh": bench_sh, "speed.txt": "10\n"})
    head = git_builder.commit("head", {"speed.txt": "12\n"})
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG)
    return {
        "repository-path": str(git_builder.root),
        "base-sha": base,
        "head-sha": head,
        "config": str(config),
        "suites": "quick",
        "rounds": "2",
        "install": "false",
        "engine-python": str(engine_python(tmp_path)),
    }


def test_the_action_benchmarks_uploads_the_results_and_reports_the_comparison(target, tmp_path):
    runner = Runner(tmp_path, {**target, "correlation-id": "perfbot-7f3a.1", "rounds": "5"})
    steps, upload = runner.run()
    assert {name: s.returncode for name, s in steps.items()} == {
        "install": 0,
        "bench": 0,
        "report": 0,
        "Fail on the verdict": 0,
    }, steps["bench"].stderr
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["name"] == "perfbot-results-perfbot-7f3a.1"
    assert upload["if-no-files-found"] == "error"
    folder = Path(upload["path"])
    results = json.loads((folder / "results.json").read_text())
    assert (results["base"]["sha"], results["head"]["sha"]) == (target["base-sha"], target["head-sha"])
    assert len(results["rounds"]) == 10 and all(r["ok"] for r in results["rounds"])
    outputs = runner.outputs()
    # 10 ms against 12 ms in every round: a 20% regression, and fail-on (never) does not fail the job.
    assert outputs["verdict"] == "regression"
    assert outputs["results-dir"] == str(folder)
    assert outputs["results-files"] == str(folder / "results.json")
    # The job summary: the compare table first, then the rounds; the same Markdown is an output and
    # is uploaded as summary.md.
    summary = runner.files["summary"].read_text()
    assert summary == (folder / "summary.md").read_text()
    assert outputs["summary-markdown"] + "\n" == summary  # an output's last line break is the delimiter's
    table, rounds = summary.index("| metric |"), summary.index("### perfbot bench: `quick`")
    assert summary.startswith("### 🔴") and table < rounds
    assert "step_ms" in summary[table:rounds]
    assert sorted(p.name for p in folder.iterdir()) == ["results.json", "summary.md"]


@pytest.mark.parametrize(
    ("fail_on", "fails"), [("regression", True), ("inconclusive", True), ("never", False)]
)
def test_fail_on_fails_the_job_after_the_upload(target, tmp_path, fail_on, fails):
    runner = Runner(tmp_path, {**target, "correlation-id": "c4", "rounds": "5", "fail-on": fail_on})
    steps, upload = runner.run()
    assert steps["bench"].returncode == 0 and steps["report"].returncode == 0
    assert upload["path"] and (Path(upload["path"]) / "results.json").exists()
    assert steps["Fail on the verdict"].returncode == (1 if fails else 0)
    if fails:
        assert f"the verdict is regression (fail-on: {fail_on})" in steps["Fail on the verdict"].stdout


def test_an_inconclusive_run_fails_only_with_fail_on_inconclusive(target, tmp_path):
    for fail_on, code in (("regression", 0), ("inconclusive", 1)):
        (tmp_path / fail_on).mkdir()
        runner = Runner(tmp_path / fail_on, {**target, "correlation-id": "c5", "fail-on": fail_on})
        steps, _ = runner.run()  # 2 rounds per side: too few for a verdict
        assert runner.outputs()["verdict"] == "inconclusive"
        assert steps["Fail on the verdict"].returncode == code


def test_several_suites_separated_by_commas_each_get_a_results_file(target, tmp_path):
    config = Path(target["config"])
    config.write_text(CONFIG + "    other:\n      kind: command\n      command: bash bench.sh\n")
    runner = Runner(tmp_path, {**target, "suites": "quick,other", "rounds": "1", "correlation-id": "c1"})
    steps, upload = runner.run()
    assert steps["bench"].returncode == 0, steps["bench"].stderr
    folder = Path(upload["path"])
    assert sorted(p.name for p in folder.iterdir()) == [
        "results.other.json",
        "results.quick.json",
        "summary.md",
    ]
    assert runner.outputs()["results-files"].splitlines() == [
        str(folder / "results.other.json"),
        str(folder / "results.quick.json"),
    ]
    summary = (folder / "summary.md").read_text()
    assert summary.count("<sub>perfbot compare · suite ") == 2


def test_a_failing_benchmark_fails_the_step_and_still_leaves_results_to_upload(target, tmp_path):
    Path(target["config"]).write_text(CONFIG.replace("bash bench.sh", "exit 3"))
    runner = Runner(tmp_path, {**target, "correlation-id": "c2"})
    steps, upload = runner.run()
    assert steps["bench"].returncode == 1
    assert "failed" in steps["bench"].stderr
    assert json.loads((Path(upload["path"]) / "results.json").read_text())["status"] == "failed"
    # No round measured: the comparison is an error, and the summary says why.
    assert runner.outputs()["verdict"] == "error"
    assert "rounds failed" in runner.outputs()["summary-markdown"]
    assert "quick: exit status 3" in runner.outputs()["summary-markdown"]


@pytest.mark.parametrize("correlation_id", ["x; touch pwned", "$(touch pwned)", "", "a/../../b", "x" * 65])
def test_a_correlation_id_that_is_not_a_plain_name_is_refused(target, tmp_path, correlation_id):
    runner = Runner(tmp_path, {**target, "correlation-id": correlation_id})
    steps, upload = runner.run()
    assert steps["bench"].returncode == 2
    assert "correlation-id must be" in steps["bench"].stdout
    assert upload["path"] == ""  # nothing to upload: the upload step fails on no files
    assert runner.outputs()["verdict"] == ""
    assert not (Path.cwd() / "pwned").exists() and not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"fail-on": "always"}, "fail-on must be regression, inconclusive or never"),
        ({"suites": "quick *"}, "suite names are 1-64 letters"),
        ({"suites": " , "}, "suites names no suite"),
    ],
)
def test_other_bad_inputs_are_refused_before_anything_runs(target, tmp_path, inputs, message):
    runner = Runner(tmp_path, {**target, "correlation-id": "c6", **inputs})
    steps, _ = runner.run()
    assert steps["bench"].returncode == 2
    assert message in steps["bench"].stdout
    assert not (runner.temp / "perfbot-results").exists()


def test_without_install_perfbot_must_already_be_on_the_path(target, tmp_path):
    runner = Runner(tmp_path, {**target, "correlation-id": "c3"})
    runner.path = ["/nonexistent"]
    steps, _ = runner.run()
    assert steps["install"].returncode == 1
    assert "perfbot is not on PATH" in steps["install"].stdout


def test_the_suites_run_the_engine_s_interpreter(target, tmp_path):
    seen = tmp_path / "seen"
    Path(target["config"]).write_text(
        CONFIG.replace("bash bench.sh", f"command -v python >> {seen}; bash bench.sh")
    )
    runner = Runner(tmp_path, {**target, "correlation-id": "c7", "rounds": "1"})
    steps, _ = runner.run()
    assert steps["bench"].returncode == 0, steps["bench"].stderr
    assert set(seen.read_text().split()) == {target["engine-python"]}


def test_an_engine_interpreter_without_torch_is_refused_at_once_in_one_line(target, tmp_path):
    runner = Runner(tmp_path, {**target, "suites": "verify-step", "correlation-id": "c8"})
    steps, _ = runner.run()
    assert steps["bench"].returncode == 2
    errors = [line for line in steps["bench"].stderr.splitlines() if line.startswith("perfbot: error")]
    assert errors == [
        f"perfbot: error: {target['engine-python']}: this interpreter cannot import torch (it did not "
        f"answer perfbot's probe), and suite 'verify-step' runs torch: name the engine's interpreter "
        f"with --python (the action's engine-python) or bench.python"
    ]
    # Refused before any set-up, warm-up or round began.
    assert not re.search(r"set-up in|warm-up \d|round \d|worker of", steps["bench"].stderr), steps[
        "bench"
    ].stderr


def test_a_python_without_torch_is_named_with_why(target, tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    runner = Runner(
        tmp_path,
        {
            **target,
            "suites": "verify-step",
            "correlation-id": "c9",
            "engine-python": str(bare / "bin" / "python"),
        },
    )
    steps, _ = runner.run()
    assert steps["bench"].returncode == 2
    assert "cannot import torch (ModuleNotFoundError: No module named 'torch')" in steps["bench"].stderr


@pytest.mark.slow
def test_perfbot_s_environment_is_made_per_job_from_downloads_kept_per_lock_and_checked_by_hash(
    target, tmp_path
):
    """The install step as on a persistent self-hosted runner: the first job downloads the locked
    files into the runner's tool cache, every job makes its own environment from them (one that the
    code under test rewrote is never used again), kept files that no longer match the locks' hashes
    are downloaded again, and a changed lock has files of its own."""
    source = tmp_path / "perfbot-source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "requirements", "bot"):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(
            ROOT / name,
            source / name,
            **({"ignore": shutil.ignore_patterns("__pycache__")} if (ROOT / name).is_dir() else {}),
        )
    install = next(step for step in ACTION["runs"]["steps"] if step.get("id") == "install")
    cache = tmp_path / "tool-cache" / "perfbot"

    def install_once(folder: str) -> tuple[subprocess.CompletedProcess, Path]:
        (tmp_path / folder).mkdir()
        runner = Runner(
            tmp_path / folder,
            {**target, "correlation-id": "c", "install": "true", "python": sys.executable},
            action_path=source,
        )
        runner.tool_cache = tmp_path / "tool-cache"  # the runner's, shared by its jobs
        done = runner.run_step(install)
        return done, Path(runner.steps["install"].get("perfbot", "-"))

    def works(perfbot: Path) -> subprocess.CompletedProcess:
        return subprocess.run([perfbot, "bench", "--help"], capture_output=True, text=True)

    first, perfbot = install_once("job1")
    assert first.returncode == 0, first.stderr
    [wheels] = [p for p in cache.iterdir() if p.name.startswith("wheels-")]
    assert first.stdout.strip() == f"perfbot: downloaded its dependencies into {wheels}"
    assert perfbot.is_relative_to(tmp_path / "job1" / "runner-temp") and works(perfbot).returncode == 0
    kept = (wheels / ".complete").stat().st_mtime_ns
    # The code under test, run as the runner's user, rewrites the perfbot it was benchmarked by.
    [planted] = (perfbot.parent.parent / "lib").glob("python*/site-packages/bot/__init__.py")
    planted.write_text("raise SystemExit('a rewritten perfbot')\n")
    assert works(perfbot).returncode != 0

    second, perfbot = install_once("job2")
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == (
        f"perfbot: installed its dependencies from {wheels} (checked against the locks' hashes)"
    )
    assert perfbot.is_relative_to(tmp_path / "job2" / "runner-temp") and works(perfbot).returncode == 0
    assert (wheels / ".complete").stat().st_mtime_ns == kept

    # A kept file rewritten: pip refuses it by its hash, and the step downloads the lock again.
    [smmap] = wheels.glob("smmap-*.whl")
    smmap.write_bytes(smmap.read_bytes() + b"\0")
    third, perfbot = install_once("job3")
    assert third.returncode == 0, third.stderr
    assert "do not install as the locks' hashes say; downloading them again" in third.stdout
    assert third.stdout.strip().endswith(f"perfbot: downloaded its dependencies into {wheels}")
    assert works(perfbot).returncode == 0

    # Another lock (here one pip refuses, so that it fails fast) is another key, another folder.
    with (source / "requirements" / "runner.txt").open("a") as lock:
        lock.write("six==1.17.0 --hash=sha256:" + "0" * 64 + "\n")
    fourth, _ = install_once("job4")
    assert fourth.returncode != 0 and "installed its dependencies" not in fourth.stdout
    assert "HASHES" in fourth.stderr
    assert len([p for p in cache.iterdir() if p.name.startswith("wheels-")]) == 2
    assert (wheels / ".complete").exists()  # the first lock's files are left as they were


def test_every_action_it_uses_is_pinned_by_a_full_commit_sha_with_its_version():
    text = (ROOT / "action.yml").read_text()
    uses = [step["uses"] for step in ACTION["runs"]["steps"] if "uses" in step]
    assert uses
    for reference in uses:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", reference), reference
        assert re.search(rf"uses: {re.escape(reference)}  # v\d+\.\d+\.\d+\n", text), reference


def test_the_build_backend_is_locked_with_hashes_at_versions_pyproject_accepts():
    lock = read_lock(ROOT / "requirements" / "build.txt")
    assert all(pin.hashes for pin in lock.values())
    backend = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    for line in backend + [
        line
        for line in (ROOT / "requirements" / "build.in").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]:
        requirement = Requirement(line)
        assert requirement.specifier.contains(lock[requirement.name.lower()].version), line
    # Both installs of perfbot take it from there and build without isolation or an index.
    for text in ((ROOT / "action.yml").read_text(), (ROOT / "runner.Dockerfile").read_text()):
        assert "requirements/build.txt" in text and "--no-build-isolation --no-index" in text


def test_every_script_reads_inputs_from_the_environment_only():
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), f"step '{step['name']}' pastes an expression into its script"


def test_the_action_has_branding_github_accepts():
    # The Marketplace's palette, and an icon of the Feather set it draws from.
    assert ACTION["branding"]["color"] in {
        "white",
        "black",
        "yellow",
        "blue",
        "green",
        "orange",
        "red",
        "purple",
        "gray-dark",
    }
    assert ACTION["branding"]["icon"] == "activity"


def test_bisect_mode_bisects_uploads_the_artifact_files_and_reports_the_status(target, tmp_path):
    """GOOD..BAD is one commit that makes the step 20% slower: the reference run, then its
    confirmation against its parent (GOOD); the artifact holds exactly the contract's files, each the
    one perfbot wrote, and the outputs are the status and the report read back as the App reads it."""
    runner = Runner(tmp_path, {**target, "mode": "bisect", "rounds": "5", "correlation-id": "b1"})
    steps, upload = runner.run()
    assert steps["bench"].returncode == 0, steps["bench"].stderr
    assert steps["report"].returncode == 0, steps["report"].stdout + steps["report"].stderr
    assert upload["name"] == "perfbot-results-b1"
    folder = Path(upload["path"])
    assert sorted(p.name for p in folder.iterdir()) == [
        "bisect.json",
        "confirm.results.json",
        "reference.results.json",
        "summary.md",
    ]
    report = json.loads((folder / "bisect.json").read_text())
    assert (report["status"], report["culprit"]["sha"]) == ("confirmed", target["head-sha"])
    assert report["reference"]["results"] == "reference.results.json"
    assert all("/" not in m["results"] for m in report["measurements"])  # no path of the runner's disk
    confirm = json.loads((folder / "confirm.results.json").read_text())
    assert (confirm["base"]["sha"], confirm["head"]["sha"]) == (target["base-sha"], target["head-sha"])
    outputs = runner.outputs()
    assert outputs["verdict"] == "confirmed"
    assert (
        f"**Culprit:** `{target['head-sha']}` head: +20.0% against its parent" in outputs["summary-markdown"]
    )
    assert runner.files["summary"].read_text() == outputs["summary-markdown"] + "\n"
    assert outputs["results-files"].splitlines() == [
        str(folder / "confirm.results.json"),
        str(folder / "reference.results.json"),
    ]


@pytest.mark.parametrize(
    "metric", ["test_attn_bf16+causal", "ttft_p99@bs8", "m" * 60 + "@" + "x" * 20 + "+" + "y" * 18]
)
def test_bisect_mode_passes_any_metric_name_a_results_file_accepts_as_one_argument(target, tmp_path, metric):
    """Such a name (`bot.core.metric_names`: ``@``, ``+``, 100 characters) reaches `perfbot bisect`
    whole: the report names it as given (the suite measures only step_ms, so it stops there)."""
    runner = Runner(tmp_path, {**target, "mode": "bisect", "metric": metric, "correlation-id": "b3"})
    steps, upload = runner.run()
    assert "metric must be" not in steps["bench"].stdout
    report = json.loads((Path(upload["path"]) / "bisect.json").read_text())
    assert report["metric"] == metric and report["status"] == "error"
    assert f"metric '{metric}' is not measured by this suite (it measures: step_ms)" in report["conclusion"]


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"mode": "bisect", "metric": "-x"}, "metric must be empty or a metric name"),
        ({"mode": "bisect", "metric": "m" * 101}, "metric must be empty or a metric name"),
        ({"mode": "bisect", "metric": "x; touch pwned"}, "metric must be empty or a metric name"),
        ({"mode": "bisect", "metric": "$(touch pwned)"}, "metric must be empty or a metric name"),
        ({"mode": "bisect", "metric": "a\nb"}, "metric must be empty or a metric name"),
        ({"mode": "bench", "metric": "step_ms"}, "metric is for bisect mode only"),
        ({"mode": "bisect; touch pwned"}, "mode must be bench or bisect"),
        ({"mode": "bisect", "suites": "quick other"}, "in bisect mode suites names exactly one suite"),
        ({"mode": "bisect", "base-sha": "HEAD~1"}, "in bisect mode base-sha (GOOD) and head-sha (BAD)"),
    ],
)
def test_bad_bisect_inputs_are_refused_before_anything_runs(target, tmp_path, inputs, message):
    runner = Runner(tmp_path, {**target, "correlation-id": "b2", **inputs})
    steps, upload = runner.run()
    assert steps["bench"].returncode == 2 and message in steps["bench"].stdout
    assert upload["path"] == "" and runner.outputs()["verdict"] == ""
    assert not (Path.cwd() / "pwned").exists() and not (tmp_path / "pwned").exists()
