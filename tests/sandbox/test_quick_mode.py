"""The sandbox measures its merges for a verdict by default, and says when they are measured too
briefly for one (its quick mode), and why the calibration page then has no outcomes."""

from __future__ import annotations

import argparse

import pytest

from bot.cli import sandbox as command
from bot.sandbox import session
from bot.sandbox.runner import Runner
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


def test_by_default_the_merges_are_measured_for_a_verdict(tmp_path):
    """Without options every merge gets the rounds a verdict needs (the quick mode is asked for),
    so the watch and the calibration page have outcomes."""
    parser = argparse.ArgumentParser()
    command.setup(parser.add_subparsers())
    args = parser.parse_args(["sandbox", "--dir", str(tmp_path)])
    assert args.merge_rounds == session.VERDICT_ROUNDS == Options(tmp_path).merge_rounds == 3
    said: list[str] = []
    sandbox = Sandbox(Options(tmp_path), say=said.append)
    sandbox.merges = []
    sandbox.replay()
    assert not [line for line in said if "quick mode" in line]


@pytest.mark.parametrize(("rounds", "most"), [(1, "1"), (2, "2"), (3, "6"), (5, "6"), (6, "6"), (8, "8")])
def test_a_merge_measured_for_a_verdict_goes_on_while_more_rounds_would_decide(tmp_path, rounds, most):
    """Three rounds per side of the slow merge (+250%, its slow path scattering by half) were left
    inconclusive on a quiet machine, and no case opened: a merge's benchmark that can reach a
    verdict takes more rounds, up to `MERGE_MAX_ROUNDS`, while the statistics say more would
    decide; the quick mode stays quick."""
    runner = Runner(None, "o/r", tmp_path, tmp_path, tmp_path / "c.yml", print, dict, merge_rounds=rounds)
    key = runner.merge_key("a" * 40, "b" * 40, ("verify-step",))
    assert (key.rounds, key.max_rounds) == (str(rounds), most)
