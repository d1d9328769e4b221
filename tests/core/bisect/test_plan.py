"""The risk-guided bisection planner: finds the first bad commit, from known results only."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.bisect import plan as bisection

COMMITS = [f"{i:02d}" + "c" * 38 for i in range(9)]  # GOOD..BAD of the motivating `git pull`


def measure(commits, culprit, risk=None, skipped=frozenset(), known=None):
    """Run the planner to its end against a history whose first bad commit is ``culprit``."""
    known = dict(known or {})
    while True:
        step = bisection.next_step(commits, known, risk, good="GOOD")
        if not isinstance(step, bisection.Probe):
            return step, known
        assert step.sha not in known, "a measured commit is never proposed again"
        position = commits.index(step.sha)
        known[step.sha] = "skipped" if step.sha in skipped else ("bad" if position >= culprit else "ok")


plain_bisection = bisection.plain_probes


def test_plain_bisection_halves_like_git_bisect():
    # 9 candidates, BAD last: git bisect probes 4, then 1 or 6, ...
    assert [bisection.plain_probes(9, c) for c in range(9)] == [3, 3, 3, 3, 3, 3, 3, 4, 4]
    assert bisection.plain_probes(1, 0) == 0 and bisection.plain_probes(2, 1) == 1


def test_the_most_suspicious_commit_and_its_parent_are_measured_first():
    risk = {sha: 5.0 for sha in COMMITS} | {COMMITS[6]: 85.0}
    step, known = measure(COMMITS, 6, risk)
    assert isinstance(step, bisection.Culprit)
    assert (step.sha, step.parent, step.runs) == (COMMITS[6], COMMITS[5], 2)
    assert set(known) == {COMMITS[5], COMMITS[6]}


def test_the_first_commit_of_the_range_has_the_good_end_as_its_parent():
    step, _ = measure(COMMITS, 0, {COMMITS[0]: 90.0})
    assert (step.sha, step.parent) == (COMMITS[0], "GOOD")


def test_equal_scores_are_plain_halving():
    first = bisection.next_step(COMMITS, {}, {})
    assert first.sha == COMMITS[3] and "halves" in first.reason
    for culprit in range(len(COMMITS)):
        step, known = measure(COMMITS, culprit)
        assert step.sha == COMMITS[culprit]
        assert len(known) == plain_bisection(len(COMMITS), culprit)


def test_the_next_step_depends_only_on_what_is_known():
    risk = {COMMITS[2]: 70.0, COMMITS[7]: 40.0}
    known = {COMMITS[4]: "ok", COMMITS[7]: "bad"}
    reordered = dict(reversed(list(known.items())))
    assert bisection.next_step(COMMITS, known, risk) == bisection.next_step(COMMITS, reordered, risk)


def test_skipped_commits_are_stepped_around():
    step, known = measure(COMMITS, 5, skipped=frozenset({COMMITS[3], COMMITS[6]}))
    assert step.sha == COMMITS[5]
    assert known[COMMITS[3]] == "skipped"


def test_only_skipped_commits_left_gives_up_with_the_candidates():
    known = {COMMITS[2]: "ok", COMMITS[3]: "skipped", COMMITS[4]: "skipped", COMMITS[5]: "bad"}
    step = bisection.next_step(COMMITS, known)
    assert isinstance(step, bisection.GiveUp)
    assert step.candidates == (COMMITS[3], COMMITS[4], COMMITS[5])
    assert step.runs == 4


def test_a_bad_end_that_measures_ok_means_there_is_nothing_to_find():
    step = bisection.next_step(COMMITS, {COMMITS[-1]: "ok"})
    assert isinstance(step, bisection.GiveUp) and "nothing regressed" in step.reason


def test_an_ok_after_a_bad_is_reported_and_the_first_bad_kept():
    known = {COMMITS[3]: "ok", COMMITS[4]: "bad", COMMITS[6]: "ok"}
    step = bisection.next_step(COMMITS, known)
    assert isinstance(step, bisection.Culprit) and step.sha == COMMITS[4]
    assert "flaky" in step.notes[0]


def test_an_empty_range_gives_up():
    assert isinstance(bisection.next_step([], {}), bisection.GiveUp)


def test_the_budget_is_plain_bisection_plus_one_at_most():
    for count in range(1, 300):
        assert bisection.probe_budget(count) <= bisection.plain_worst_case(count) + 1
        assert bisection.probe_budget(count) >= bisection.plain_worst_case(count)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), count=st.integers(1, 70))
def test_any_culprit_under_any_scores_is_found_within_plain_bisection_plus_one(data, count):
    commits = [f"{i:040x}" for i in range(count)]
    culprit = data.draw(st.integers(0, count - 1))
    scores = data.draw(st.lists(st.floats(-10, 150) | st.just(math.nan), min_size=count, max_size=count))
    step, known = measure(commits, culprit, dict(zip(commits, scores, strict=True)))
    assert isinstance(step, bisection.Culprit) and step.sha == commits[culprit]
    assert len(known) <= plain_bisection(count, culprit) + 1
    assert len(known) <= bisection.probe_budget(count)
    assert step.parent == (commits[culprit - 1] if culprit else "GOOD")


@settings(max_examples=300, deadline=None)
@given(data=st.data(), count=st.integers(1, 40))
def test_any_skip_pattern_names_the_culprit_or_gives_up_with_it_among_the_candidates(data, count):
    commits = [f"{i:040x}" for i in range(count)]
    culprit = data.draw(st.integers(0, count - 1))
    skipped = frozenset(data.draw(st.sets(st.sampled_from(commits[:-1]))) if count > 1 else ())
    scores = data.draw(st.lists(st.floats(0, 100), min_size=count, max_size=count))
    step, known = measure(commits, culprit, dict(zip(commits, scores, strict=True)), skipped)
    if isinstance(step, bisection.Culprit):
        assert step.sha == commits[culprit]
    else:
        assert isinstance(step, bisection.GiveUp) and commits[culprit] in step.candidates
    parent_measurable = culprit == 0 or commits[culprit - 1] not in skipped
    if commits[culprit] not in skipped and parent_measurable:
        assert isinstance(step, bisection.Culprit)
    assert len(known) <= count


def test_a_good_ranking_needs_fewer_runs_on_average_than_plain_bisection():
    commits = [f"{i:040x}" for i in range(30)]
    guided = plain = 0
    for culprit in range(30):
        risk = {sha: 10.0 + (i * 7) % 40 for i, sha in enumerate(commits)} | {commits[culprit]: 80.0}
        guided += len(measure(commits, culprit, risk)[1])
        plain += plain_bisection(30, culprit)
    assert guided < plain
    assert math.isclose(plain / 30, 4.93, abs_tol=0.1)


def test_the_budget_and_plain_worst_case_of_tiny_ranges():
    assert [bisection.probe_budget(n) for n in (0, 1, 2, 3, 4, 9)] == [0, 0, 2, 2, 3, 4]
    assert [bisection.plain_worst_case(n) for n in (0, 1, 2, 3, 4, 9)] == [0, 0, 1, 2, 2, 4]


def test_a_score_ten_points_higher_is_twice_as_suspicious_and_scores_are_clamped():
    shas = ["a", "b", "c", "d", "e", "f"]
    weights = bisection._weights(
        shas, {"a": 0.0, "b": 10.0, "c": 20.0, "d": -5.0, "e": 250.0, "f": float("nan")}
    )
    assert weights == [1.0, 2.0, 4.0, 1.0, 1024.0, 1.0]
    assert bisection._weights(["x"], {}) == [1.0] and bisection.RISK_DOUBLING == 10.0


def _imbalance(weights, low, high, p):
    left = sum(weights[low + 1 : p + 1])
    return round(abs(left - (sum(weights[low + 1 : high + 1]) - left)), 9), abs((p - low) - (high - p)), p


def test_the_probe_splits_the_prior_weight_most_evenly_among_the_positions_the_budget_allows():
    """The rule of the module docstring, computed here by brute force, against the planner."""
    import random

    rng = random.Random(11)
    for _ in range(200):
        count = rng.randrange(3, 24)
        commits = [f"{i:02d}" + "x" * 38 for i in range(count)]
        risk = {sha: rng.choice([0.0, 0.0, 5.0, 30.0, 60.0, 95.0]) for sha in commits}
        # Mid-search too: GOOD..low measured ok, high measured bad.
        high = rng.randrange(1, count)
        low = rng.randrange(-1, high - 1)
        known = {commits[high]: "bad", **({commits[low]: "ok"} if low >= 0 else {})}
        step = bisection.next_step(commits, known, risk)
        weights = [2 ** (risk[sha] / 10) for sha in commits]
        budget = bisection.probe_budget(count) - len(known) + (high == count - 1)
        feasible = [
            p
            for p in range(low + 1, high)
            if max(bisection.plain_worst_case(p - low), bisection.plain_worst_case(high - p)) <= budget - 1
        ]
        if high == low + 1 or not feasible:
            continue  # a culprit, or the budget spent (test_with_the_budget_spent_the_planner_halves...)
        expected = min(feasible, key=lambda p, w=weights, lo=low, hi=high: _imbalance(w, lo, hi, p))
        assert step.sha == commits[expected], (count, risk)
        halving = min(feasible, key=lambda p: (abs((p - low) - (high - p)), p))
        assert step.reason.startswith(
            "splits the suspicion evenly" if expected != halving else "halves the remaining commits"
        )
        assert step.reason.endswith(f"({high - low} candidates left)")


def test_with_the_budget_spent_the_planner_halves_and_says_so():
    known = {COMMITS[1]: "bad", COMMITS[5]: "ok", COMMITS[6]: "ok", COMMITS[7]: "ok", COMMITS[8]: "bad"}
    commits = COMMITS[:3] + ["03" + "d" * 38] + COMMITS[3:]
    step = bisection.next_step(
        commits,
        {COMMITS[2]: "bad", **{c: o for c, o in known.items() if c != COMMITS[1]}},
        {commits[1]: 90.0},
    )
    assert isinstance(step, bisection.Probe)
    assert step.reason == "halves the remaining commits (3 candidates left)"


def test_an_ok_after_the_first_bad_is_named_exactly_and_probes_made_leave_out_the_bad_end():
    commits = [f"{i:02d}abcdefghij{i:02d}" + "e" * 26 for i in range(6)]
    for late in (3, 4):  # right after the first bad, and further on
        step = bisection.next_step(commits, {commits[1]: "ok", commits[2]: "bad", commits[late]: "ok"})
        assert isinstance(step, bisection.Culprit) and step.sha == commits[2]
        assert step.notes == (
            f"{commits[late][:12]} measured ok after the first bad commit {commits[2][:12]}: "
            "the regression may be flaky, or fixed and reintroduced; the first bad commit is kept",
        )
    assert (
        bisection._probes_made(
            commits, {commits[0]: "ok", commits[1]: "skipped", commits[3]: "bad", commits[5]: "bad"}
        )
        == 2
    )
