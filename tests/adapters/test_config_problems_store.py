"""The problems of each repository's config as perfbot last read it: kept per repository, replaced
by a later read, gone once the file reads clean, and bounded."""

from __future__ import annotations

PROBLEMS = ("bench.timout: unknown key (did you mean 'timeout'?)", "risk.comment: 'hihg' is not allowed")


def test_a_read_with_problems_is_kept_per_repository_and_a_clean_read_clears_it(store):
    store.config_problems.record("o/a", ".github/perfbot.yml@main", PROBLEMS)
    store.config_problems.record("o/b", ".github/perfbot.yml@trunk", PROBLEMS[:1])
    [a, b] = store.config_problems.current()
    assert (a.repo, a.source, a.problems) == ("o/a", ".github/perfbot.yml@main", PROBLEMS)
    assert (b.repo, b.problems) == ("o/b", PROBLEMS[:1]) and b.since.tzinfo is not None
    assert [p.repo for p in store.config_problems.current(["o/b", "o/c"])] == ["o/b"]
    assert store.config_problems.current([]) == []
    store.config_problems.record("o/a", ".github/perfbot.yml@main", ())
    assert [p.repo for p in store.config_problems.current()] == ["o/b"]
    store.config_problems.record("o/a", ".github/perfbot.yml@main", ())  # nothing to clear: no error
    assert [p.repo for p in store.config_problems.current()] == ["o/b"]


def test_the_same_problems_read_again_keep_their_first_time_and_new_ones_replace_them(store):
    store.config_problems.record("o/a", ".github/perfbot.yml@main", PROBLEMS)
    [first] = store.config_problems.current()
    store.config_problems.record("o/a", ".github/perfbot.yml@main", PROBLEMS)
    assert store.config_problems.current() == [first]
    store.config_problems.record("o/a", ".github/perfbot.yml@main", PROBLEMS[1:])
    [later] = store.config_problems.current()
    assert later.problems == PROBLEMS[1:] and later.since >= first.since


def test_a_hostile_file_s_problems_are_bounded(store):
    store.config_problems.record("o/a", "x" * 1000, [f"k{i}: " + "y" * 1000 for i in range(500)])
    [kept] = store.config_problems.current()
    assert len(kept.problems) == 50 and all(len(p) <= 300 for p in kept.problems) and len(kept.source) <= 300
