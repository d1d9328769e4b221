"""The per-round chart: which metrics, the ABBA order of the pairs, failed rounds, and Mermaid text
that no metric name or unit from a results file can break out of."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.judge import results, stats
from bot.core.render import chart
from bot.core.render import compare as render_compare
from tests.core.judge.results_data import EAGLE3, document


def judged(doc: dict) -> tuple[results.Results, stats.Comparison]:
    loaded = results.load(json.dumps(doc))
    return loaded, stats.decide(loaded)


def _verify_step(**changes: float) -> dict:
    doc = document({name: EAGLE3[name] for name in ("cycle_ms", "draft_ms")}, suite="verify-step")
    doc["metrics"]["cycle_ms"]["role"] = "headline"
    doc["metrics"]["draft_ms"]["role"] = "diagnostic"
    return doc


def test_the_headline_metric_is_charted_pair_by_pair_in_the_order_the_rounds_ran():
    loaded, comparison = judged(_verify_step())
    [drawn] = chart.round_charts(loaded, comparison)
    assert drawn.metric == "cycle_ms" and drawn.verdict == "regression"
    assert drawn.labels[:4] == ("1 BH", "2 HB", "3 BH", "4 HB")
    assert drawn.base == tuple(EAGLE3["cycle_ms"][2]) and drawn.head == tuple(EAGLE3["cycle_ms"][3])
    assert drawn.to_dict()["base_first"][:2] == [True, False]


def test_a_suite_without_a_headline_charts_its_first_deciding_metric():
    loaded, comparison = judged(
        document(
            {
                "latency": ("ms", "lower", [10.0, 10.1, 9.9], [12.0, 12.1, 11.9]),
                "noise": ("ms", "lower", [1.0, 1.1, 0.9], [1.0, 1.1, 0.9]),
            }
        )
    )
    assert [c.metric for c in chart.round_charts(loaded, comparison)] == [comparison.metrics[0].name]


def test_the_pairs_are_labelled_by_the_order_in_the_file_not_by_the_rounds_indexes():
    """The runner gives both rounds of a pair one index (its pair's): before, every pair compared
    equal indexes and read 'HB'. The test data number rounds as the runner does."""
    doc = _verify_step()
    assert {(r["side"], r["index"]) for r in doc["rounds"][:2]} == {("base", 0), ("head", 0)}
    loaded, comparison = judged(doc)
    [drawn] = chart.round_charts(loaded, comparison)
    assert drawn.labels[:4] == ("1 BH", "2 HB", "3 BH", "4 HB")
    doc["rounds"][0], doc["rounds"][1] = doc["rounds"][1], doc["rounds"][0]  # head ran first
    loaded, comparison = judged(doc)
    assert chart.round_charts(loaded, comparison)[0].labels[:2] == ("1 HB", "2 HB")


def test_the_bars_stand_on_an_axis_from_zero():
    """Before, the axis spanned the values' range plus 15%: a +1% change filled the chart."""
    loaded, comparison = judged(_verify_step())
    markdown = chart.charts_markdown(chart.round_charts(loaded, comparison), collapsed=False)
    top = max(max(EAGLE3["cycle_ms"][2]), max(EAGLE3["cycle_ms"][3])) * 1.1
    assert f'y-axis "ms" 0 --> {chart._num(top)}' in markdown
    assert "on an axis from 0" in markdown


def test_a_pair_with_a_failed_round_is_left_out_of_the_drawing_and_named():
    """Before, a failed round was drawn at the axis' lower end, where it looked like the fastest."""
    doc = _verify_step()
    failed = next(r for r in doc["rounds"] if r["side"] == "head" and r["index"] == 0)
    failed.update(ok=False, error="CUDA error", metrics={})
    loaded, comparison = judged(doc)
    [drawn] = chart.round_charts(loaded, comparison)
    assert drawn.head[0] is None and drawn.to_dict()["head"][0] is None  # a gap in the dashboard
    markdown = chart.charts_markdown([drawn], collapsed=False)
    assert '"1 BH"' not in markdown and re.search(r'x-axis "round pair" \["2 HB", "3 BH"', markdown)
    bars = re.search(r"bar \[([^\]]*)\]", markdown).group(1).split(", ")
    line = re.search(r"line \[([^\]]*)\]", markdown).group(1).split(", ")
    assert len(bars) == len(line) == len(drawn.base) - 1
    assert "Not drawn: pair 1 BH, where a round failed (see the per-round values)." in markdown


def test_one_round_per_side_says_why_there_is_no_chart():
    loaded, comparison = judged(_one_pair())
    assert chart.round_charts(loaded, comparison) == []
    sentence = chart.no_chart(loaded, comparison)
    assert sentence == (
        "<sub>No per-round chart of `latency`: it takes at least 2 round pairs in which both sides "
        "measured it, and this run has 1 such pair.</sub>"
    )
    assert sentence in render_compare.compare_markdown(loaded, comparison)


def _one_pair() -> dict:
    return document({"latency": ("ms", "lower", [10.0], [12.0])})


def test_too_few_pairs_draw_nothing():
    loaded, comparison = judged(_one_pair())
    assert chart.round_charts(loaded, comparison) == []
    assert chart.charts_markdown([], collapsed=True) == ""


def test_an_unchanged_comparison_folds_its_chart_away():
    loaded, comparison = judged(_verify_step())
    charts = chart.round_charts(loaded, comparison)
    assert chart.charts_markdown(charts, collapsed=True).startswith("<details><summary>Per-round chart")
    assert not chart.charts_markdown(charts, collapsed=False).startswith("<details>")


def test_numbers_are_plain_decimals_mermaid_can_read():
    assert [chart._num(v) for v in (123456.7, 0.000123456, 19.0, -2.5)] == [
        "123460",
        "0.00012346",
        "19",
        "-2.5",
    ]


names = st.text(alphabet=st.sampled_from('abc_."`\n\r[]%{}<>#;:-'), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(unit=st.one_of(names.map(lambda text: text[:20]), st.text(max_size=20)))
def test_no_unit_can_break_out_of_the_mermaid_block(unit):
    doc = document({"latency": (unit, "lower", [10.0, 10.1, 9.9], [12.0, 12.1, 11.9])})
    loaded, comparison = judged(doc)
    markdown = chart.charts_markdown(chart.round_charts(loaded, comparison), collapsed=False)
    block = markdown.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    directive, block = block.split("\n", 1)  # the chart's own colours, never the input's
    assert directive.startswith("%%{init: ") and "`" not in block and "%%" not in block
    for line in block.splitlines():
        assert line.count('"') % 2 == 0, line  # every string closed on its own line
