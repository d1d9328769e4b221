"""The example workflow (examples/workflows/perfbot-bench.yml) fits the bot's dispatch and the action.

The bot dispatches it with the inputs of the bot-runner contract (below, as agreed) and finds the run
by its title; the workflow hands those inputs to the action, which must have every one of them.
"""

from __future__ import annotations

import math
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st

from .expressions import evaluate, interpolate

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "examples" / "workflows" / "perfbot-bench.yml").read_text()
WORKFLOW = yaml.safe_load(TEXT)
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
(JOB,) = WORKFLOW["jobs"].values()
CHECKOUT, PERFBOT = JOB["steps"]

# The workflow_dispatch inputs the bot sends, all strings (the contract's table), and whether the
# bot always sends a value.
CONTRACT_INPUTS = {
    "pr": False,
    "base-sha": True,
    "head-sha": True,
    "suites": True,
    "rounds": False,
    "max-rounds": False,
    "correlation-id": True,
    "mode": False,
    "metric": False,
}
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


def test_it_runs_on_a_self_hosted_gpu_runner():
    assert {"self-hosted", "gpu"} <= set(JOB["runs-on"])


def dispatched(
    pr: str, head_sha: str, ref: str = "refs/heads/main", mode: str = "bench", base_sha: str = "b" * 40
) -> tuple[str, bool]:
    """The concurrency group and cancel-in-progress of a run the bot dispatched with these inputs
    (``mode`` as GitHub fills in the default when the bot leaves it out)."""
    contexts = {
        "inputs": {
            "pr": pr,
            "head-sha": head_sha,
            "base-sha": base_sha,
            "correlation-id": "c",
            "mode": mode,
            "metric": "",
        },
        "github": {"ref": ref, "workflow": WORKFLOW["name"]},
    }
    concurrency = WORKFLOW["concurrency"]
    group, cancel = interpolate(concurrency["group"], contexts), concurrency.get("cancel-in-progress", False)
    if isinstance(cancel, str):
        cancel = interpolate(cancel, contexts)
    assert isinstance(group, str) and group
    assert isinstance(cancel, bool)
    return group, cancel


SHAS = st.text("0123456789abcdef", min_size=40, max_size=40)
PRS = st.integers(1, 10**6).map(str)


@given(first=SHAS, second=SHAS)
def test_default_branch_runs_of_two_commits_never_cancel_each_other(first, second):
    assume(first != second)
    (one, cancels), (other, _) = dispatched("", first), dispatched("", second)
    assert one != other
    assert not cancels


@given(pr=PRS, first=SHAS, second=SHAS)
def test_two_pushes_to_one_pull_request_share_a_group_and_the_newer_cancels_the_older(pr, first, second):
    (one, cancels), (other, _) = dispatched(pr, first), dispatched(pr, second)
    assert one == other
    assert cancels


@given(pr=PRS, other_pr=PRS, sha=SHAS)
def test_pull_requests_and_the_default_branch_never_share_a_group(pr, other_pr, sha):
    assume(pr != other_pr)
    assert dispatched(pr, sha)[0] != dispatched("", sha)[0]
    assert dispatched(pr, sha)[0] != dispatched(other_pr, sha)[0]


@given(good=SHAS, other_good=SHAS, bad=SHAS)
def test_a_bisection_never_shares_a_group_with_a_benchmark_and_is_never_cancelled(good, other_good, bad):
    bisection, cancels = dispatched("", bad, mode="bisect", base_sha=good)
    assert not cancels
    assert bisection != dispatched("", bad)[0]
    assume(good != other_good)
    assert bisection != dispatched("", bad, mode="bisect", base_sha=other_good)[0]


def test_a_merge_run_is_not_cancelled_by_the_scheduled_run_after_it():
    # The case a user hit: both dispatched with pr "" (the bot's merge and scheduled runs).
    merge, scheduled = dispatched("", "1" * 40), dispatched("", "2" * 40)
    assert merge[0] != scheduled[0] and not merge[1] and not scheduled[1]


def test_the_expression_evaluator_follows_github_s_documented_semantics():
    contexts = {"inputs": {"pr": "", "n": "7"}, "github": {"ref": "refs/heads/main"}}
    assert evaluate("inputs.pr || github.ref", contexts) == "refs/heads/main"
    assert evaluate("inputs.pr && 'x' || 'y'", contexts) == "y"
    assert evaluate("inputs.n && 'x' || 'y'", contexts) == "x"
    assert evaluate("inputs.pr != ''", contexts) is False
    assert evaluate("'ABC' == 'abc'", contexts) is True  # strings compare ignoring case
    assert evaluate("format('{0}-{{x}}-{1}', 'a', 1)", contexts) == "a-{x}-1"
    assert evaluate("inputs.missing", contexts) is None
    assert evaluate("!contains(github.ref, 'release/')", contexts) is True
    assert interpolate("perfbot-${{ inputs.n }}-${{ inputs.pr }}", contexts) == "perfbot-7-"


def test_the_head_is_checked_out_with_full_history_and_no_credentials():
    assert CHECKOUT["uses"].startswith("actions/checkout@")
    assert CHECKOUT["with"] == {
        "ref": "${{ inputs.head-sha }}",
        "fetch-depth": 0,
        "persist-credentials": False,
    }


def test_every_action_is_pinned_by_a_full_commit_sha_with_its_version():
    for step in JOB["steps"]:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
        assert re.search(rf"- uses: {re.escape(step['uses'])}  # v\d+\.\d+\.\d+\n", TEXT), step["uses"]
    assert f"{PERFBOT['uses']}  # v{project_version()}\n" in TEXT


def test_the_perfbot_action_is_pinned_to_a_commit_whose_action_is_this_one():
    """The pin names a commit of this repository whose action.yml is the one beside this workflow:
    changing action.yml means pinning the commit that holds the change."""
    sha = PERFBOT["uses"].removeprefix("perfbot/perfbot@")
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the pinned commit cannot be read")
    shown = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{sha}:action.yml"], capture_output=True, text=True, check=False
    )
    assert shown.returncode == 0, f"{sha} is not a commit of this repository: {shown.stderr.strip()}"
    assert shown.stdout == (ROOT / "action.yml").read_text(), f"{sha}'s action.yml is not this one: pin again"


def test_the_action_gets_every_dispatched_input_under_its_own_name():
    assert PERFBOT["uses"].startswith("perfbot/perfbot@")
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
