"""Regression cases: one key per change, states that only move forward, report statuses mapped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.core.watch import cases
from bot.core.watch.cases import Span

shas = st.text("0123456789abcdef", min_size=40, max_size=40)
names = st.text(min_size=1, max_size=20)


@given(names, names, names, shas, shas)
def test_a_key_is_the_change_itself(repo, suite, metric, good, bad):
    span = Span(repo, suite, metric, good, bad)
    assert span.key() == Span(repo, suite, metric, good, bad).key()
    assert len(span.key()) <= 64 and span.key().startswith("case-")
    if good != bad:
        assert span.key() != Span(repo, suite, metric, bad, good).key()


def test_keys_of_parts_that_run_together_differ():
    assert (
        Span("a/b", "s", "m1", "0" * 40, "1" * 40).key() != Span("a/b", "s1", "m", "0" * 40, "1" * 40).key()
    )


def test_an_ended_case_never_moves_and_a_bisecting_one_only_ends():
    for end in cases.ENDS:
        assert not any(cases.can_move(end, wanted) for wanted in cases.MOVES)
    assert set(cases.MOVES[cases.BISECTING]) <= {*cases.ENDS}
    # a bisect whose range no longer holds the change is superseded by a wider one
    assert cases.can_move(cases.BISECTING, cases.SUPERSEDED)
    assert not cases.can_move(cases.BISECTING, cases.RECOVERED)  # its bisect will say
    assert not cases.can_move(cases.CONFIRMED, cases.SUPERSEDED)


def test_a_range_measured_again_without_a_decision_is_inconclusive_not_unchanged():
    assert cases.after_bisect("not_reproduced", "inconclusive") == cases.INCONCLUSIVE
    assert cases.after_bisect("not_reproduced", "unchanged") == cases.NOT_REPRODUCED
    assert cases.after_bisect("confirmed", "regression") == cases.CONFIRMED
    assert cases.after_bisect("what?") == cases.FAILED
    assert cases.can_move(cases.OUT_OF_BUDGET, cases.BISECTING)
    assert not cases.can_move("no-such-state", cases.BISECTING)


def test_the_sources_of_a_move_are_exactly_the_states_that_may_make_it():
    for wanted in cases.MOVES:
        assert set(cases.sources_of(wanted)) == {s for s in cases.MOVES if cases.can_move(s, wanted)}


def test_every_report_status_of_the_contract_has_an_end_and_anything_else_fails():
    assert {s: cases.after_bisect(s) for s in cases.REPORT_STATUSES} == {
        "confirmed": "confirmed",
        "likely": "unconfirmed",
        "not_confirmed": "unconfirmed",
        "not_reproduced": "not_reproduced",
        "error": "failed",
    }
    assert cases.after_bisect("made-up") == cases.FAILED
    assert set(cases.LABELS) == set(cases.MOVES)
