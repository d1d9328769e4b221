"""docs/bench.md's section on the standard tools documents every kind that runs one, and each of
its config examples is a valid config of the kinds it shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.core.config import schema
from bot.core.config.suite_kinds import KINDS
from bot.core.config.suite_kinds.result_file import ResultFileSuite

DOC = (Path(__file__).resolve().parents[1] / "docs" / "bench.md").read_text()
SECTION = DOC[DOC.index("## Standard benchmark tools as suites") :]
SECTION = SECTION[: m.start() + 3] if (m := re.search(r"^## ", SECTION[3:], re.MULTILINE)) else SECTION
EXAMPLES = re.findall(r"^```yaml\n(.*?)^```$", SECTION, re.DOTALL | re.MULTILINE)
TOOL_KINDS = sorted(name for name, kind in KINDS.items() if issubclass(kind.options, ResultFileSuite))


def test_every_standard_tool_kind_has_its_section():
    assert len(TOOL_KINDS) == 6
    for kind in TOOL_KINDS:
        assert f"\n### `{kind}`\n" in SECTION, kind


@pytest.mark.parametrize("example", EXAMPLES)
def test_each_config_example_is_valid(example):
    loaded = schema.load(example)
    assert {suite.kind for suite in loaded.bench.suites.values()} <= set(TOOL_KINDS)


def test_every_kind_has_an_example():
    shown = {kind for example in EXAMPLES for kind in re.findall(r"kind: ([\w-]+)", example)}
    assert shown == set(TOOL_KINDS)
