"""The example workflow (examples/workflows/perfbot-bench.yml) fits the bot's dispatch and the action.

The bot dispatches it with the inputs of the bot-runner contract (below, as agreed) and finds the run
by its title; the workflow hands those inputs to the action, which must have every one of them.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "examples" / "workflows" / "perfbot-bench.yml").read_text()
WORKFLOW = yaml.safe_load(TEXT)
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
(JOB,) = WORKFLOW["jobs"].values()
CHECKOUT, PERFBOT = JOB["steps"]

# The workflow_dispatch inputs the bot sends, all strings (the contract's table), and whether the
# bot always sends a value.
CONTRACT_INPUTS = {"pr": False, "base-sha": True, "head-sha": True, "suites": True, "rounds": False,
                   "max-rounds": False, "correlation-id": True}
# What the workflow's timeout is written for (its comment says so): bench.warmup, bench.max_rounds,
# bench.timeout, one suite, and minutes for checking out and installing perfbot.
WARMUP, MAX_ROUNDS, ROUND_TIMEOUT_S, INSTALL_MINUTES = 1, 10, 900, 20


def test_it_is_dispatched_with_exactly_the_contract_s_inputs():
    trigger = WORKFLOW[True]  # YAML 1.1 reads the key `on` as True
    assert list(trigger) == ["workflow_dispatch"]
    inputs = trigger["workflow_dispatch"]["inputs"]
    assert list(inputs) == list(CONTRACT_INPUTS)
    assert all(spec["type"] == "string" for spec in inputs.values())
    # What the bot may leave empty must not be required; what it always sends is required unless a
    # default stands in for it.
    for name, always_sent in CONTRACT_INPUTS.items():
        assert inputs[name]["required"] == (always_sent and "default" not in inputs[name]), name


def test_the_run_is_named_after_the_correlation_id():
    assert WORKFLOW["run-name"] == "perfbot bench ${{ inputs.correlation-id }}"


def test_it_asks_for_no_permission_but_reading_the_code_and_uses_no_secret():
    assert WORKFLOW["permissions"] == {}
    assert JOB["permissions"] == {"contents": "read"}
    assert "secrets." not in TEXT and "github.token" not in TEXT


def test_it_runs_on_a_self_hosted_gpu_runner_one_benchmark_per_pull_request():
    assert {"self-hosted", "gpu"} <= set(JOB["runs-on"])
    assert WORKFLOW["concurrency"] == {"group": "perfbot-bench-${{ inputs.pr || github.ref }}",
                                       "cancel-in-progress": True}


def test_the_head_is_checked_out_with_full_history_and_no_credentials():
    assert CHECKOUT["uses"].startswith("actions/checkout@")
    assert CHECKOUT["with"] == {"ref": "${{ inputs.head-sha }}", "fetch-depth": 0, "persist-credentials": False}


def test_the_action_gets_every_dispatched_input_under_its_own_name():
    assert PERFBOT["uses"] == f"perfbot/perfbot@v{project_version()}"
    given = PERFBOT["with"]
    required = {name for name, spec in ACTION["inputs"].items() if spec.get("required")}
    assert required <= set(given) <= set(ACTION["inputs"])
    assert given == {name: f"${{{{ inputs.{name} }}}}" for name in CONTRACT_INPUTS if name != "pr"}


def test_the_timeout_covers_every_process_the_config_allows():
    processes_per_side = 1 + WARMUP + MAX_ROUNDS  # set-up, warm-ups, rounds: each under the timeout
    bound = math.ceil(2 * processes_per_side * ROUND_TIMEOUT_S / 60) + INSTALL_MINUTES
    assert JOB["timeout-minutes"] == bound
    # The comment that explains it names the same numbers.
    assert f"bench: {{warmup: {WARMUP}, max_rounds: {MAX_ROUNDS}, timeout: {ROUND_TIMEOUT_S}}}" in TEXT
    assert re.search(rf"= {bound} min\.", TEXT)


def project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
