"""The sandbox says when its merges are measured too briefly for a verdict (its quick mode), and
why the calibration page then has no outcomes."""

from __future__ import annotations

import pytest

from bot.sandbox.session import Options, Sandbox


@pytest.mark.parametrize("rounds", [1, 3])
def test_the_replay_says_whether_its_merges_can_reach_a_verdict(tmp_path, rounds):
    said: list[str] = []
    sandbox = Sandbox(Options(tmp_path, merge_rounds=rounds), say=said.append)
    sandbox.merges = []
    sandbox.replay()
    quick = [line for line in said if "quick mode" in line]
    if rounds < 3:
        assert quick == [
            "  (quick mode: 1 round per side, enough for the history's points, too few for a verdict: "
            "every merge stays inconclusive and the calibration page has no outcomes; --merge-rounds 3 "
            "or more lets the statistics decide, in about that many times as long)"
        ]
    else:
        assert quick == []
