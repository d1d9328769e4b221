"""docs/runner.md shows the example workflow as it is, the action's every input and output, and a
config that validates."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bot.core.config import schema as config

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "runner.md").read_text()
BLOCKS = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", DOC, re.S)]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())


def test_the_docs_show_the_example_workflow_as_it_is():
    assert (ROOT / "examples" / "workflows" / "perfbot-bench.yml").read_text() in DOC


def test_the_docs_list_every_input_and_output_of_the_action():
    for name in [*ACTION["inputs"], *ACTION["outputs"]]:
        assert f"| `{name}` |" in DOC, name


def test_the_example_config_validates():
    example = next(b for b in BLOCKS if "bench" in b)
    loaded = config.load(yaml.safe_dump(example))
    assert set(loaded.bench.suites) == {"verify-step", "sglang-eagle3", "decode-latency"}
    assert loaded.bench.pass_env == ["HF_HOME", "TRITON_*"]
