"""The example workflow and config in docs/runner.md stay valid against the action and the schema."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bot.core.config import schema as config

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "runner.md").read_text()
BLOCKS = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", DOC, re.S)]
WORKFLOW = next(b for b in BLOCKS if "jobs" in b)
ACTION_INPUTS = yaml.safe_load((ROOT / "action.yml").read_text())["inputs"]


def test_the_example_workflow_is_dispatched_with_the_shas_and_a_correlation_id():
    trigger = WORKFLOW[True]["workflow_dispatch"]["inputs"]  # YAML 1.1 reads the key `on` as True
    assert {"base_sha", "head_sha", "correlation_id"} <= set(trigger)
    assert all(trigger[name]["required"] for name in ("base_sha", "head_sha", "correlation_id"))


def test_the_example_workflow_asks_for_no_permission_but_reading_the_code_and_uses_no_secret():
    assert WORKFLOW["permissions"] == {}
    (job,) = WORKFLOW["jobs"].values()
    assert job["permissions"] == {"contents": "read"}
    assert "self-hosted" in job["runs-on"]
    assert "secrets." not in DOC


def test_the_example_workflow_passes_only_inputs_the_action_has_and_every_required_one():
    (job,) = WORKFLOW["jobs"].values()
    (step,) = [s for s in job["steps"] if "perfbot@" in s.get("uses", "")]
    required = {name for name, spec in ACTION_INPUTS.items() if spec.get("required")}
    assert required <= set(step["with"]) <= set(ACTION_INPUTS)
    checkout = job["steps"][0]["with"]
    assert checkout["fetch-depth"] == 0 and checkout["persist-credentials"] is False


def test_the_example_config_validates():
    example = next(b for b in BLOCKS if "bench" in b)
    loaded = config.load(yaml.safe_dump(example))
    assert set(loaded.bench.suites) == {"verify-step", "sglang-eagle3", "decode-latency"}
