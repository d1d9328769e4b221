"""The gate's operating point (benchmarks/operating_point.py) and the held-out set's miner
(benchmarks/mine_regressions.py), on their figures and on a small real git history."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import mine_regressions  # noqa: E402
import operating_point as op  # noqa: E402

scores = st.lists(st.integers(0, 100), min_size=1, max_size=30)


@given(scores, scores)
@settings(max_examples=200, deadline=None)
def test_auc_is_the_share_of_pairs_a_positive_wins_ties_half(positives, negatives):
    pairs = [1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives]
    assert op.auc(positives, negatives) == pytest.approx(sum(pairs) / len(pairs))


def test_auc_needs_both_samples_and_the_bootstrap_brackets_it_reproducibly():
    with pytest.raises(ValueError, match="at least one"):
        op.auc([], [1])
    positives, negatives = [60, 45, 30, 70, 10], [0, 5, 12, 30, 45, 2, 1, 0, 60, 8]
    low, high = op.bootstrap_auc(positives, negatives, 500)
    assert low <= op.auc(positives, negatives) <= high < 1.0
    assert (low, high) == op.bootstrap_auc(positives, negatives, 500)
    assert op.bootstrap_auc([90], [10, 20], 50) == (1.0, 1.0)


def test_reciprocal_rank_averages_over_the_orders_of_the_ties():
    alone = op.Culprit("a", "s", 50, [60, 40, 40])
    tied = op.Culprit("a", "s", 40, [60, 40, 10])  # second or third: 1/2 and 1/3 equally likely
    assert alone.reciprocal_rank == 0.5
    assert tied.reciprocal_rank == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert (tied.higher, tied.same) == (1, 1)


def test_levels_curve_and_operating_point():
    thresholds = {"low": 1, "medium": 30, "high": 60}
    window = [0] * 50 + [10] * 30 + [40] * 15 + [70] * 5
    assert op.share_at(window, 30) == 0.2 and op.share_at([], 1) == 0.0
    assert (
        op.operating_point(thresholds, window, [40, 70, 35, 90, 30, 31, 50, 45, 33, 61], 0.9, 0.25)
        == "medium"
    )
    assert op.operating_point(thresholds, window, [40, 70, 35, 90, 30, 31, 50, 45, 33, 61], 0.9, 0.15) is None
    assert op.operating_point(thresholds, window, [70] * 10, 0.9, 0.15) == "high"
    points = op.curve(window, {"set": [40, 70]})
    assert [p["threshold"] for p in points] == [0, 10, 40, 70]
    flagged = [p["flagged"] for p in points]
    assert flagged == sorted(flagged, reverse=True) and flagged[0] == 1.0
    assert [p["set"] for p in points] == [1.0, 1.0, 1.0, 0.5]


@pytest.mark.parametrize(
    ("subject", "fix"),
    [
        ("Fix perf regression on small batch sizes (#3008)", True),
        ("Fix slow fused add RMSNorm (#10141)", True),
        ("[Fix] Resolve performance drop in speculative decoding aiter backend (#11087)", True),
        ("Sanity check to prevent performance regression (#3171)", False),  # nothing fixed
        ("Fix the default arguments of bench_offline_throughput.py (#2042)", False),
        ("fix: adding performance logging for nightly diffusion (#18023)", False),
        ("Speed up MoE (#1)", False),
    ],
)
def test_fix_subjects(subject, fix):
    assert mine_regressions.is_fix(subject) is fix


def test_blamed_lines_are_the_old_side_lines_a_fix_rewrites_in_source_files():
    patch = "\n".join(
        [
            "--- a/engine/x.py",
            "+++ b/engine/x.py",
            "@@ -5,2 +5,1 @@",
            "-a",
            "-b",
            "+c",
            "@@ -20,0 +20,2 @@",
            "+d",
            "+e",
            "--- a/docs/x.md",
            "+++ b/docs/x.md",
            "@@ -1 +1 @@",
            "-x",
            "+y",
            "--- /dev/null",
            "+++ b/engine/new.py",
            "@@ -0,0 +1 @@",
            "+z",
        ]
    )
    assert mine_regressions.blamed_lines(patch) == {"engine/x.py": [5, 6, 20]}
    assert not mine_regressions.is_source("tests/test_x.py")
    assert not mine_regressions.is_source("python/pyproject.toml")
    assert mine_regressions.is_source("engine/distributed/pynccl.py")


HOT = "engine/distributed/pynccl.py"


def body(line: str) -> str:
    return "\n".join(["import os", "", "", "def all_reduce(self, x):", f"    {line}", "    return x", ""])


@pytest.fixture
def history(git_builder, monkeypatch):
    """A culprit (a host sync in all_reduce), commits around it, and a fix that names a slowdown."""
    monkeypatch.setattr(mine_regressions, "BEFORE", 2)
    monkeypatch.setattr(mine_regressions, "AFTER", 2)
    shas = [git_builder.commit("start", {HOT: body("y = x"), "docs/a.md": "a\n"})]
    shas.append(git_builder.commit("docs one", {"docs/a.md": "b\n"}))
    shas.append(git_builder.commit("docs two", {"docs/a.md": "c\n"}))
    shas.append(git_builder.commit("Add a check (#7)", {HOT: body("y = x.item()")}))
    shas.append(git_builder.commit("docs three", {"docs/a.md": "d\n"}))
    shas.append(git_builder.commit("Fix perf regression in all_reduce (#9)", {HOT: body("y = x")}))
    shas.append(git_builder.commit("docs four", {"docs/a.md": "e\n"}))
    return git_builder, shas


def test_the_miner_blames_the_fix_on_the_commit_that_wrote_what_it_rewrites(history):
    builder, shas = history
    [entry] = mine_regressions.mine(str(builder.root), set(), set())
    assert (entry["culprit"]["sha"], entry["culprit"]["pr"], entry["fix"]["sha"]) == (shas[3], 7, shas[5])
    assert entry["range"] == {"base": shas[0], "head": shas[5], "commits": 5}
    assert mine_regressions.mine(str(builder.root), {shas[5]}, set()) == []  # a tuning set's fix
    assert mine_regressions.mine(str(builder.root), set(), {shas[3]}) == []  # or its culprit


def test_the_script_scores_the_window_and_each_sets_culprits(history, tmp_path, capsys, monkeypatch):
    builder, shas = history
    [entry] = mine_regressions.mine(str(builder.root), set(), set())
    labelled = tmp_path / "set.json"
    labelled.write_text(json.dumps({"regressions": [entry]}))
    out = tmp_path / "op.json"
    argv = [
        "operating_point.py",
        "--repo",
        str(builder.root),
        "--window",
        "6",
        "--tuning",
        str(labelled),
        "--heldout",
        str(labelled),
        "--bootstrap",
        "50",
        "--json",
        str(out),
    ]
    monkeypatch.setattr(sys, "argv", argv)
    assert op.main() == 0
    figures = json.loads(out.read_text())
    assert figures["window"] == 6
    culprit = figures["sets"]["heldout"]["scores"][0]
    assert culprit["sha"] == shas[3] and culprit["score"] > 0 and culprit["of"] == 5
    assert culprit["position"] == 1 and figures["sets"]["heldout"]["mrr"] == 1.0
    assert figures["sets"]["heldout"]["auc"] > 0.5
    assert figures["levels"]["low"]["heldout"] == 1.0
    printed = capsys.readouterr().out
    assert "ROC-AUC" in printed and "operating point:" in printed and "score >=" in printed


def test_the_trade_along_the_curve():
    points = op.curve([0] * 50 + [10] * 30 + [40] * 15 + [70] * 5, {"h": [10, 40, 40, 70]})
    found = op.trade(points, "h", 0.9, 0.15)
    assert (found["at_recall"]["threshold"], found["at_recall"]["flagged"]) == (10, 0.5)
    assert (found["at_flagged"]["threshold"], found["at_flagged"]["h"]) == (70, 0.25)
    assert op.trade(points, "h", 1.1, -1) == {"at_recall": None, "at_flagged": None}


# A constant of one file that a mapped function of another reads every step.
SIZES = "engine/sizes.py"
STEP = "engine/step.py"
STEP_PY = "from engine.sizes import BLOCK\n\n\ndef run(x):\n    return x[:BLOCK]\n"


@pytest.fixture
def mapped_history(git_builder, tmp_path):
    """A base commit the map was made of, then docs, a culprit that changes a constant the mapped
    step reads, and a change to code no step runs."""
    base = git_builder.commit("start", {SIZES: "BLOCK = 16\n", STEP: STEP_PY, "docs/a.md": "a\n"})
    docs = git_builder.commit("docs", {"docs/a.md": "b\n"})
    culprit = git_builder.commit("Smaller blocks (#3)", {SIZES: "BLOCK = 4\n"})
    helper = git_builder.commit("a helper", {"engine/tools.py": "def shout(x):\n    return x.upper()\n"})
    mapped = {
        "schema": 1,
        "commit": base,
        "suite": "trace",
        "step": "profiled step",
        "steps": 3,
        "source": "torch.profiler",
        "kernels": [],
        "functions": [{"path": STEP, "function": "run", "line": 4, "calls_per_step": 8, "host_share": 0.2}],
    }
    (tmp_path / "maps").mkdir()
    (tmp_path / "maps" / "base.json").write_text(json.dumps(mapped))
    entry = {
        "culprit": {"sha": culprit, "subject": "Smaller blocks (#3)"},
        "range": {"base": base, "head": helper},
        "map": "maps/base.json",
    }
    return git_builder, {"base": base, "docs": docs, "culprit": culprit, "helper": helper}, entry


def test_an_entry_with_a_map_is_scored_without_and_with_it(mapped_history, tmp_path):
    builder, shas, entry = mapped_history
    repo = op.GitRepo.open(builder.root)
    rules = op.ruleset.build(op.RepoConfig(), [])
    plain = {"regressions": [{k: v for k, v in entry.items() if k != "map"}]}
    [alone] = op.score_set(repo, rules, plain, tmp_path)
    [both] = op.score_set(repo, rules, {"regressions": [entry]}, tmp_path)
    assert alone.mapped is None and (alone.sha, alone.score) == (both.sha, both.score)
    assert both.mapped is not None and both.mapped.score >= 60 > both.score
    assert both.mapped.position == 1 and sorted(both.mapped.range_shas) == sorted(
        [shas["docs"], shas["helper"]]
    )
    figures = op.map_report([alone, both], {"low": 1, "medium": 30, "high": 60})
    assert figures is not None and (figures["culprits"], figures["range_commits"]) == (1, 2)
    high = figures["levels"]["high"]
    assert high["without"]["culprits"] == {
        "share": 0.0,
        "hits": 0,
        "of": 1,
        "95": pytest.approx([0.0, 0.7935], abs=1e-4),
    }
    assert high["with"]["culprits"]["hits"] == 1 and high["with"]["culprits"]["95"][1] == pytest.approx(1.0)
    assert high["with"]["others"]["hits"] == 0 and high["with"]["others"]["of"] == 2
    assert figures["scores"] == [
        {
            "sha": shas["culprit"],
            "subject": "Smaller blocks (#3)",
            "without": both.score,
            "with": both.mapped.score,
        }
    ]
    assert op.map_report([alone], {"low": 1, "medium": 30, "high": 60}) is None
    printed = "\n".join(op.render_maps({"heldout": figures}))
    assert "heldout with maps: 1 culprits in mapped ranges, 2 other commits in those ranges" in printed
    assert "0/1 0% [0%, 79%]" in printed and "1/1 100% [21%, 100%]" in printed


def test_the_ranges_other_commits_count_once_however_many_ranges_hold_them():
    a = op.Culprit("a", "s", 10, [5, 7], 1, range_shas=["x", "y"])
    b = op.Culprit("b", "s", 10, [7, 3], 1, range_shas=["y", "z"])
    assert op.others([a, b]) == [5, 7, 3]


def test_wilson_intervals_bracket_the_share():
    assert op.wilson(0, 27) == pytest.approx((0.0, 0.1246), abs=1e-4)
    low, high = op.wilson(7, 8)
    assert low < 7 / 8 < high and (round(low, 2), round(high, 2)) == (0.53, 0.98)
    assert op.share_with_interval([], 30) == {"share": 0.0, "hits": 0, "of": 0, "95": [0.0, 1.0]}


def test_a_map_the_repository_cannot_read_stops_the_script(mapped_history, tmp_path):
    builder, _, entry = mapped_history
    repo = op.GitRepo.open(builder.root)
    rules = op.ruleset.build(op.RepoConfig(), [])
    (tmp_path / "maps" / "bad.json").write_text("{}")
    with pytest.raises(SystemExit, match="bad.json: not a map file"):
        op.score_set(repo, rules, {"regressions": [{**entry, "map": "maps/bad.json"}]}, tmp_path)
    other = json.loads((tmp_path / "maps" / "base.json").read_text()) | {"commit": "e" * 40}
    (tmp_path / "maps" / "other.json").write_text(json.dumps(other))
    with pytest.raises(SystemExit, match="the repository has no commit eeeeeeeeeeee, the map's"):
        op.score_set(repo, rules, {"regressions": [{**entry, "map": "maps/other.json"}]}, tmp_path)


def test_the_script_reports_the_held_out_sets_maps(mapped_history, tmp_path, capsys, monkeypatch):
    builder, _, entry = mapped_history
    labelled = tmp_path / "set.json"
    labelled.write_text(json.dumps({"regressions": [entry]}))
    out = tmp_path / "op.json"
    argv = ["operating_point.py", "--repo", str(builder.root), "--window", "3", "--heldout", str(labelled)]
    monkeypatch.setattr(
        sys, "argv", [*argv, "--tuning", str(labelled), "--bootstrap", "20", "--json", str(out)]
    )
    assert op.main() == 0
    figures = json.loads(out.read_text())
    assert set(figures["maps"]) == {"tuning", "heldout"}
    assert figures["maps"]["heldout"]["levels"]["high"]["with"]["culprits"]["hits"] == 1
    assert "heldout with maps: 1 culprits" in capsys.readouterr().out
