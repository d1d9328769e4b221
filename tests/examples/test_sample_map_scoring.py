"""Scoring with a map the profiled pass makes of the sample repository on CPU, afresh: a change to
a helper the allreduce calls scores high, a change in the communicator's error path does not."""

from __future__ import annotations

import json

import pytest

from bot.core import stepmap
from tests.core.risk.test_stepmap_scoring import error_path_change, helper_change
from tests.examples import test_sample_repo
from tests.support.missing import importorskip

sample = test_sample_repo.sample  # the same fixture: the sample built in a fresh folder


@pytest.mark.slow
def test_a_fresh_map_of_the_sample_scores_the_allreduces_helper_high_and_its_error_path_not(sample, tmp_path):
    importorskip("torch")
    results = test_sample_repo._profiled_run(sample, tmp_path, sample["before_slow"], sample["slow"], "ab")
    mapped = stepmap.parse(json.loads(results.read_text()))
    assert mapped.commit == sample["before_slow"]
    plain, scored = helper_change(mapped)
    assert (plain.level, scored.level) == ("medium", "high")
    assert any(s.rule == "map.per-step" and s.function == "get_tp_communicator" for s in scored.signals)
    plain, scored = error_path_change(mapped)
    assert plain.level == "medium" and scored.level == "low"
