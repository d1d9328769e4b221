"""The whole round trip on the sample repository, all real but GitHub: a signed `pull_request` for
the slow commit, or a maintainer's `/bench`, is dispatched; the test plays the GPU runner by running
the action's steps on CPU with the dispatched inputs; the artifact goes to the emulator; the signed
`workflow_run` brings the comparison, with its numbers, to the sticky comment.

The last comment is also written to ``$PERFBOT_BENCH_EXAMPLE_DIR`` when that is set, with the results
file behind it: docs/bench.md shows them (tests/test_bench_docs.py checks they agree).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import git
import pytest

from bot.core.judge import quantities, results, stats
from examples.sample_repo import PERFBOT_YML, build
from tests.emulator import live
from tests.emulator.bench_support import NUMBER, finish, play_runner, sticky
from tests.support import github_data
from tests.support.missing import importorskip

pytestmark = pytest.mark.slow
# What docs/bench.md shows: two gloo ranks on CPU are noisy, so adaptive rounds may go on to 10.
BENCH_COMMAND = "/bench verify-step --rounds 5 --max-rounds 10"


@pytest.fixture
def sample(tmp_path, monkeypatch):
    importorskip("torch")
    monkeypatch.setenv("HOME", str(tmp_path))
    return build(tmp_path / "sample")


@pytest.fixture
def bot(emulator, tmp_path, app_key, sample):
    live.add_repository(
        emulator, PERFBOT_YML, {"octocat": "write", "maintainer": "maintain"}, head=sample["head"]
    )
    diff = git.Repo(sample["path"]).git.diff(sample["before_slow"], sample["slow"]) + "\n"
    emulator.add_pull(
        live.REPO, NUMBER, sample["slow"], diff, base_sha=sample["before_slow"], base_ref=live.DEFAULT_BRANCH
    )
    running = live.start(
        emulator, f"sqlite:///{tmp_path / 'perfbot.db'}", f"sqlite:///{tmp_path / 'queue.db'}", app_key
    )
    yield running
    running.stop()


def round_trip(bot, emulator, tmp_path, sample) -> tuple[str, Path]:
    """Play the runner for the one dispatch, send its completion, and return the sticky comment."""
    [dispatched] = emulator.dispatches
    inputs = dispatched["inputs"]
    assert (inputs["base-sha"], inputs["head-sha"], inputs["pr"]) == (
        sample["before_slow"],
        sample["slow"],
        str(NUMBER),
    )
    assert "Benchmarks are running" in sticky(emulator)
    name, archive, folder = play_runner(tmp_path, dispatched, Path(sample["path"]))
    finish(bot, emulator, dispatched["run_id"], artifact=(name, archive))
    bot.wait_idle(timeout=60)
    return sticky(emulator), folder / "results.json"


def assert_the_numbers_are_in(comment: str, results_file: Path) -> None:
    loaded = results.load(results_file.read_bytes())
    comparison = stats.decide(loaded)
    assert comparison.metrics
    rows = comment.splitlines()
    for metric in comparison.metrics:
        start = f"| `{metric.name}` {metric.unit} {'↓' if metric.better == 'lower' else '↑'}"
        numbers = f" | {quantities.number(metric.base_center)} | {quantities.number(metric.head_center)} | "
        assert any(row.startswith(start) and numbers in row for row in rows), (start, numbers)


def keep_for_the_docs(comment: str, results_file: Path, name: str) -> None:
    folder = os.environ.get("PERFBOT_BENCH_EXAMPLE_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.md").write_text(comment)
        shutil.copy(results_file, Path(folder) / f"{name}.results.json")


def test_the_slow_commits_pull_request_is_benchmarked_and_the_comparison_comes_back(
    bot, emulator, tmp_path, sample
):
    opened = github_data.pull_request("opened", head_sha=sample["slow"], number=NUMBER, installation_id=1)
    assert bot.deliver("pull_request", opened).status_code == 202
    bot.wait_idle()
    assert "Performance risk: **high**" in sticky(emulator)
    comment, results_file = round_trip(bot, emulator, tmp_path, sample)
    assert "Performance risk: **high**" in comment and "Benchmark verdict:" in comment
    assert "started automatically" in comment
    assert_the_numbers_are_in(comment, results_file)
    [check] = [c for c in emulator.checks_for(live.REPO, sample["slow"]) if c["name"] == "perfbot / bench"]
    assert check["status"] == "completed" and check["conclusion"] in ("neutral", "failure")
    keep_for_the_docs(comment, results_file, "automatic")


def test_a_maintainers_bench_of_the_slow_commit_comes_back_with_its_numbers(bot, emulator, tmp_path, sample):
    emulator.repos[live.REPO].permissions["octocat"] = "read"  # the author's push starts nothing
    bot.deliver(
        "pull_request",
        github_data.pull_request("opened", head_sha=sample["slow"], number=NUMBER, installation_id=1),
    )
    bot.wait_idle()
    assert emulator.dispatches == []
    posted = emulator.add_comment(live.REPO, NUMBER, BENCH_COMMAND, "maintainer")
    bot.deliver(
        "issue_comment",
        github_data.issue_comment(
            BENCH_COMMAND,
            number=NUMBER,
            repo=live.REPO,
            installation_id=1,
            login="maintainer",
            comment_id=posted["id"],
        ),
    )
    bot.wait_idle()
    assert emulator.reactions_on(posted["id"]) == ["eyes", "rocket"]
    assert (emulator.dispatches[0]["inputs"]["rounds"], emulator.dispatches[0]["inputs"]["max-rounds"]) == (
        "5",
        "10",
    )
    comment, results_file = round_trip(bot, emulator, tmp_path, sample)
    assert "requested by `maintainer` with `/bench`" in comment
    assert_the_numbers_are_in(comment, results_file)
    assert json.loads(results_file.read_text())["options"]["rounds"] == 5
    keep_for_the_docs(comment, results_file, "bench-command")
