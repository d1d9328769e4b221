"""The words that travel between the layers (risk levels, what triggered a benchmark, the actions of
an event) are typed with the vocabulary's Literals, so that mypy refuses a word that is not one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.missing import importorskip

ROOT = Path(__file__).resolve().parents[2]

USES = """
from datetime import UTC, datetime
from typing import Literal

from bot.core.review.plan import ReviewPlan
from bot.service.events import PullRequestEvent
from bot.core.vocabulary import Level
from bot.service.records import BenchRequest, Merge, Review

def review(level: {level}) -> Review:
    return Review(repo="o/r", number=1, head_sha="a", score=1, level=level)

def merge(level: {level} | None) -> Merge:
    return Merge(repo="o/r", number=1, title="t", merge_sha=None, head_sha="a", score=None, level=level,
                 merged_at=None)

def request(trigger: {trigger}) -> BenchRequest:
    return BenchRequest(correlation_id="c", repo="o/r", installation_id=None, number=None, base_sha="b",
                        head_sha="a", suites=(), trigger=trigger, status="requested", created_at=datetime.now(UTC))

def level_of(plan: ReviewPlan) -> Level:
    return plan.level

def closed(event: PullRequestEvent) -> bool:
    return event.action == {action}
"""


def mypy(tmp_path: Path, **words: str) -> list[str]:
    """The errors mypy finds in the uses above, with this repository's settings (run from its root,
    where it finds `bot`)."""
    api = importorskip("mypy.api")
    source = tmp_path / "uses.py"
    source.write_text(USES.format(**words))
    stdout, _, _ = api.run(
        ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"), str(source)]
    )
    return [line for line in stdout.splitlines() if line.startswith(str(source))]


@pytest.fixture(autouse=True)
def at_the_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.slow
def test_the_vocabulary_s_words_type_check(tmp_path):
    assert mypy(tmp_path, level='Literal["high"]', trigger='Literal["merge"]', action='"closed"') == []


@pytest.mark.slow
def test_a_word_outside_the_vocabulary_is_refused(tmp_path):
    errors = mypy(tmp_path, level="str", trigger="str", action='"labeled"')
    assert [e.split(": error: ")[1].split(" [")[0][:40] for e in errors] == [
        'Argument "level" to "Review" has incompa',
        'Argument "level" to "Merge" has incompat',
        'Argument "trigger" to "BenchRequest" has',
        "Non-overlapping equality check (left ope",
    ], errors
