"""Triage's ranked commits: merges, the top of a range, and the note on an empty merge."""

from __future__ import annotations

from bot.core.risk import ruleset, triage
from tests.core.risk.test_scoring import file_diff

RULES = ruleset.build(None, profile="generic")
HOT = file_diff(
    "engine/distributed/pynccl.py", ["        y = 1"], ["        y = 2"], header="def all_reduce(self):"
)


def commit(sha: str, parents: int, diff: str) -> triage.Commit:
    return triage.Commit(sha * 40, tuple(str(i) * 40 for i in range(parents)), "a", "2026-01-01", "s", diff)


def test_a_merge_has_two_parents_and_only_an_empty_one_gets_the_note():
    ranked = triage.rank(
        [commit("a", 1, HOT), commit("b", 2, ""), commit("c", 2, HOT), commit("d", 1, "")], RULES, "x..y"
    ).commits
    by_sha = {item.commit.sha[0]: item for item in ranked}
    assert [by_sha[s].is_merge for s in "abcd"] == [False, True, True, False]
    noted = {s for s, item in by_sha.items() if item.report.notes}
    assert noted == {"b"}
    assert by_sha["b"].to_dict()["merge"] is True and by_sha["a"].to_dict()["merge"] is False


def test_the_top_of_a_range_still_counts_the_whole_range():
    whole = triage.rank([commit("a", 1, HOT), commit("b", 1, ""), commit("c", 1, HOT)], RULES, "x..y")
    assert (len(whole.top(2).commits), whole.top(2).ranked) == (2, 3)
    assert (whole.top(0).commits, whole.top(-1).commits, whole.top(0).ranked) == ([], [], 3)
    assert whole.top(0).to_dict()["total"] == 3 and whole.ranked == 3
