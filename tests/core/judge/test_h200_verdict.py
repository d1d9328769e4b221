"""The H200 runs of benchmarks/results/h200-verdict, replayed: the sample's slow commit is a regression
in 3 rounds per side, fresh or served by a worker, and its kernel diff names the padding fill; the
parent against itself claims nothing, kernels included; bisect's confirmation carries the same
kernel diff; and each round recorded how long it took."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from bot.core.judge import profile, results, stats

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "h200-verdict"
FILL = "FillFunctor"
AB = [
    "r3/ab.json",
    "r3/ab-worker.json",
    "r5/ab.json",
    "r5/ab-worker.json",
    "r3/bisect/confirm-3e4bb76d9d.json",
]
AA = ["r3/aa.json", "r3/aa-worker.json"]


def replay(name: str) -> tuple[results.Results, stats.Comparison]:
    loaded = results.load((RESULTS / name).read_bytes(), name)
    return loaded, stats.decide(loaded)


@pytest.mark.parametrize("name", AB)
def test_the_slow_commit_is_a_regression_of_the_headline_cycle(name):
    loaded, comparison = replay(name)
    cycle = next(m for m in comparison.metrics if m.name == "cycle_ms")
    assert comparison.verdict == "regression" and cycle.role == "headline" and cycle.mode == "piecewise"
    assert cycle.verdict == "regression" and 1.3 < cycle.ratio < 3.0


@pytest.mark.parametrize("name", AB)
def test_its_kernel_diff_names_the_fill_per_allreduce_and_the_extra_copies(name):
    loaded, _ = replay(name)
    d = profile.diff_of(loaded.base.profile, loaded.head.profile)
    assert d is not None and d.changed
    [fill] = [k for k in d.kernels if FILL in k.name]
    assert (fill.change, fill.family, fill.head_calls) == ("appeared", "memset", 36)  # 32 verify + 4 draft
    copies = [k for k in d.kernels if k.name.startswith("Memcpy DtoD")]
    assert copies and copies[0].head_calls == 2 * copies[0].base_calls
    assert [f.family for f in d.families if f.moved] == ["memset"]


@pytest.mark.parametrize("name", AA)
def test_the_parent_against_itself_claims_nothing_kernels_included(name):
    loaded, comparison = replay(name)
    assert comparison.verdict == "unchanged"
    assert not [m.name for m in comparison.metrics if m.verdict in ("regression", "improvement")]
    d = profile.diff_of(loaded.base.profile, loaded.head.profile)
    assert d is not None and not d.changed


@pytest.mark.parametrize("name", [*AB[:4], *AA])
def test_every_round_says_how_long_it_took_and_in_which_process(name):
    loaded, _ = replay(name)
    assert all(r.seconds is not None and 0 < r.seconds < 10 for r in loaded.rounds)
    processes = [r.process for r in sorted(loaded.rounds, key=lambda r: r.index)]
    assert processes[:2] == ["fresh", "fresh"] and processes[-2:] == ["fresh", "fresh"]
    assert ("worker" in processes) == ("worker" in name)


def test_the_earlier_version_took_four_times_as_long_per_round_for_the_same_verdict():
    before, comparison = replay("before/before-ab.json")
    assert comparison.verdict == "regression" and before.base.profile is None
    log = (RESULTS / "before" / "before-ab.log").read_text().splitlines()
    # It recorded no seconds per round: its progress lines did ("round 3/6 (...)", then "ok in 12.3s").
    then = [
        float(line.split("ok in ")[1].rstrip("s"))
        for previous, line in zip(log, log[1:], strict=False)
        if ": round " in previous and "ok in " in line
    ]
    now, _ = replay("r3/ab.json")
    assert len(then) == 6 and statistics.median(then) > 4 * statistics.median(
        r.seconds or 0 for r in now.rounds
    )
    cost = json.loads((RESULTS / "r3" / "cost.json").read_text())
    fresh = next(row for row in cost if row["run"] == "ab")
    assert fresh["verdict"] == "regression" and fresh["wall_s"] <= 60
    bisect = next(row for row in cost if row["run"] == "bisect")
    assert bisect["culprit_is_the_slow_commit"] and bisect["wall_s"] <= 180
