"""The history opens on the headline metric, not on the first diagnostic metric in alphabetical
order (the sandbox's verify-step suite opened on `allreduce_ms`)."""

from __future__ import annotations

from bot.service.ports.dashboard import SeriesKey
from bot.web.dashboard.api import headline_first


def key(suite: str, metric: str, repo: str = "o/r") -> SeriesKey:
    return SeriesKey(repo, suite, metric, "ms", "lower", 10, None)


def test_the_suite_s_headline_comes_before_its_diagnostics_in_alphabetical_order():
    # As the store lists them: by repository, suite, then metric name.
    keys = [key("verify-step", m) for m in ("allreduce_ms", "cycle_ms", "decode_ms", "tok_s")]
    assert [k.metric for k in headline_first(keys)] == ["cycle_ms", "tok_s", "allreduce_ms", "decode_ms"]


def test_a_suite_of_another_name_still_opens_on_a_headline_metric_and_the_order_is_kept_otherwise():
    keys = [key("mine", "a_ms"), key("mine", "b_ms"), key("mine", "cycle_ms"), key("other", "z_ms")]
    assert [k.metric for k in headline_first(keys)] == ["cycle_ms", "a_ms", "b_ms", "z_ms"]
