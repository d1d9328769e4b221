"""The per-round chart: which metrics, the ABBA order of the pairs, failed rounds, and Mermaid text
that no metric name or unit from a results file can break out of."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.judge import results, stats
from bot.core.render import chart
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


def test_a_failed_round_is_a_gap_in_the_data_and_drawn_at_the_axis_end():
    doc = _verify_step()
    failed = next(r for r in doc["rounds"] if r["side"] == "head" and r["index"] == 1)
    failed.update(ok=False, error="CUDA error", metrics={})
    loaded, comparison = judged(doc)
    [drawn] = chart.round_charts(loaded, comparison)
    assert drawn.head[0] is None
    markdown = chart.charts_markdown([drawn], collapsed=False)
    assert "A failed round is drawn at the axis' lower end" in markdown
    low = re.search(r'y-axis "ms" ([\d.]+) -->', markdown).group(1)
    assert re.search(r"line \[" + re.escape(low) + ",", markdown)


def test_too_few_pairs_draw_nothing():
    loaded, comparison = judged(document({"latency": ("ms", "lower", [10.0], [12.0])}))
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
