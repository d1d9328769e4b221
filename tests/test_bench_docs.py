"""docs/bench.md shows the real sticky comment of the end-to-end test: its comparison is what the
renderer makes of the results file kept beside it, and every config key and command is documented."""

from __future__ import annotations

import re
from pathlib import Path

from bot.core.bench.artifact import Artifact
from bot.core.bench.judging import judge
from bot.core.config.schema import Cooldowns, DispatchConfig
from bot.core.judge import results
from bot.core.render import bench as render_bench

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "bench.md").read_text()
RESULTS = ROOT / "docs" / "examples" / "bench.results.json"


def example() -> str:
    return re.search(r"^````markdown\n(.*?)^````$", DOC, re.DOTALL | re.MULTILINE).group(1)


def test_the_example_comment_is_the_renderers_output_for_the_results_file_beside_it():
    loaded = results.load(RESULTS.read_bytes())
    judged = judge(
        Artifact({"results.json": RESULTS.read_bytes()}), loaded.base.sha, loaded.head.sha, (loaded.suite,)
    )
    [suite] = judged.suites
    comment = example()
    assert suite.markdown in comment
    run_url = re.search(r"\(\[workflow run\]\((https://[^)]+)\)\)", comment).group(1)
    section = render_bench.section_markdown(
        render_bench.BenchSection(
            "completed",
            loaded.base.sha,
            loaded.head.sha,
            (loaded.suite,),
            "command",
            "maintainer",
            run_url,
            "success",
            results=(render_bench.SuiteResult(suite.suite, suite.verdict, suite.headline, suite.markdown),),
        )
    )
    assert section in comment
    assert comment.startswith("<!-- perfbot:risk-review -->\n")


def test_every_dispatch_key_is_documented():
    configuration = (ROOT / "docs" / "configuration.md").read_text()
    for key in DispatchConfig.model_fields:
        if key != "cooldown":
            assert f"| `{key}` |" in configuration, key
    for key in Cooldowns.model_fields:
        assert f"| `cooldown.{key}` |" in configuration, key


def test_every_command_of_the_help_is_documented():
    for command in re.findall(r"\| `(/bench[^`]*)`", render_bench.HELP):
        assert command.split(" ·")[0] in DOC, command
