"""Progress on standard error: plain lines for long runs, one rewritten status line for counts."""

from __future__ import annotations

import io

from bot.runner import progress as progress_module
from bot.runner.progress import Progress, format_duration


def test_plain_lines_are_prefixed_and_stay():
    stream = io.StringIO()
    progress = Progress(stream)
    progress.say("bisect: reference run")
    progress.done()
    assert stream.getvalue() == "perfbot: bisect: reference run\n"


def test_a_status_line_is_rewritten_in_place_and_cleared_at_the_end():
    stream = io.StringIO()
    progress = Progress(stream, rewrite=True)
    progress.say("reading 3 commits")
    progress.count("scoring commit", 3, 3)
    progress.done()
    assert stream.getvalue() == "\r\033[Kreading 3 commits\r\033[Kscoring commit 3/3\r\033[K"


def test_counts_are_throttled_but_the_last_always_shows(monkeypatch):
    clock = iter([10.0, 10.05, 10.1, 10.3])
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: next(clock))
    stream = io.StringIO()
    progress = Progress(stream)
    for done in (1, 2, 3, 4):
        progress.count("scoring commit", done, 4)
    assert stream.getvalue().splitlines() == ["perfbot: scoring commit 1/4", "perfbot: scoring commit 4/4"]


def test_nothing_is_written_when_disabled():
    stream = io.StringIO()
    progress = Progress(stream, enabled=False, rewrite=True)
    progress.say("x")
    progress.count("y", 1, 1)
    progress.done()
    assert stream.getvalue() == ""


def test_durations_read_as_hours_minutes_or_seconds():
    assert [format_duration(s) for s in (7, 125, 3725)] == ["7s", "2m05s", "1h02m"]


def test_a_pass_that_ended_before_it_is_reported_says_its_own_seconds():
    """A profiled pass is reported once its trace is read, after the end's walk: its line says
    how long it took, not how long ago it began."""
    out = io.StringIO()
    p = Progress(stream=out)
    p.round_finished(100.0, True, None, counted=False, ended=102.5)
    p.round_finished(100.0, False, "no trace", counted=False, ended=101.0)
    assert "ok in 2.5s" in out.getvalue() and "FAILED after 1.0s: no trace" in out.getvalue()
    assert p.durations == []
