"""docs/runner.md shows the example workflow as it is, the action's every input and output, a config
that validates, and where the two halves of a suite kind are."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bot.core.config import schema as config
from bot.core.config import suite_kinds

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


def test_adding_a_suite_kind_names_the_modules_that_hold_each_half():
    section = re.search(r"^### Add a suite kind\n(.*?)^##", DOC, re.S | re.M).group(1)
    paths = set(re.findall(r"`((?:bot|tests)/[\w/<>]+\.py)`", section))
    assert {
        "bot/core/config/suite_kinds/<kind>.py",
        "bot/runner/suites/<kind>.py",
        "bot/core/config/schema.py",
        "bot/core/config/suite_kinds/__init__.py",
        "bot/runner/suites/__init__.py",
        "tests/runner/test_suite_kinds.py",
    } <= paths
    for kind in suite_kinds.names():
        for path in paths:
            assert (ROOT / path.replace("<kind>", kind.replace("-", "_"))).is_file(), path
