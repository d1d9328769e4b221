"""The comparison report: golden Markdown per scenario, escaping, size limit, headline wording."""

from __future__ import annotations

import copy
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.judge import results, stats
from bot.core.render import compare as render_compare
from bot.core.render.markdown import fit
from tests.core.judge.results_data import EAGLE3, FINGERPRINT, document

QUIET = {
    "verify_ms": (
        "ms",
        "lower",
        [583.0, 583.4, 582.9, 583.1, 583.2, 582.8, 583.0, 583.3],
        [583.1, 583.0, 583.2, 582.9, 583.3, 583.0, 582.8, 583.1],
    ),
    "allreduce_us": (
        "us",
        "lower",
        [44.0, 45.0, 44.5, 44.8, 45.2, 44.1, 44.9, 44.6],
        [44.4, 44.9, 44.2, 45.1, 44.7, 44.3, 45.0, 44.6],
    ),
}


def judged(doc: dict) -> tuple[results.Results, stats.Comparison]:
    loaded = results.load(json.dumps(doc))
    return loaded, stats.decide(loaded)


def _changed_environment() -> dict:
    head = copy.deepcopy(FINGERPRINT)
    head["torch"]["nccl"] = "2.27.1"
    head["env"]["NCCL_ALGO"] = "Tree"
    head["gpus"][0]["clocks.sm"] = "1410"
    return document(EAGLE3, head_fingerprint=head)


def _failed_head() -> dict:
    empty_head = {n: (u, b, base, []) for n, (u, b, base, _) in EAGLE3.items()}
    return document(empty_head, failed={"head": 3})


def _hostile() -> dict:
    doc = document(
        QUIET,
        failed={"head": 1},
        error="<script>alert(1)</script> | ![x](http://evil/) @team #1 `rm -rf` **boom**",
    )
    doc["suite"] = "<img src=x onerror=alert(1)>`\n# heading"
    hostile_fp = copy.deepcopy(FINGERPRINT)
    hostile_fp["env"]["NCCL_DEBUG"] = "</details><h1>pwned</h1>|a|b|"
    doc["head"]["fingerprint"] = hostile_fp
    return doc


def _failed_pair() -> dict:
    """The regression with one head round failed (its pair is left out of the chart)."""
    doc = document(EAGLE3)
    failed = next(r for r in doc["rounds"] if r["side"] == "head" and r["index"] == 2)
    failed.update(ok=False, error="CUDA error: an illegal memory access was encountered", metrics={})
    return doc


SCENARIOS = {
    "regression": lambda: document(EAGLE3),
    "failed_pair": _failed_pair,
    "unchanged": lambda: document(QUIET),
    "inconclusive": lambda: document({"ttft_ms": ("ms", "lower", [30.0, 34.0, 29.0], [33.0, 36.0, 31.0])}),
    "environment": _changed_environment,
    "error": _failed_head,
    "hostile": _hostile,
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_markdown_of_each_scenario_matches_its_golden_file(scenario, file_regression):
    loaded, comparison = judged(SCENARIOS[scenario]())
    file_regression.check(
        render_compare.compare_markdown(loaded, comparison), extension=".md", basename=f"compare_{scenario}"
    )


def test_the_headline_of_the_motivating_regression_says_it_in_words():
    _, comparison = judged(document(EAGLE3))
    line = render_compare.headline(comparison)
    assert line.startswith("This PR makes the EAGLE-3 cycle 52% slower, and 2 more regressions")
    assert line.endswith("speculation is now 27% slower than not speculating")
    assert render_compare.headline(comparison, subject="Commit 0be30d4").startswith("Commit 0be30d4 makes")


@pytest.mark.parametrize(
    "name,unit,better,factor,phrase",
    [
        ("spec_tok_s", "tok/s", "higher", 0.64, "makes EAGLE-3 decoding 36% slower"),
        ("accept_length", "tokens", "higher", 0.8, "lowers the EAGLE-3 accept length by 20%"),
        ("latency", "ms", "lower", 1.04, "makes latency 4.0% slower"),
        ("requests_per_s", "req/s", "higher", 0.5, "makes requests_per_s 50% slower"),
        ("memory_gib", "GiB", "lower", 1.25, "raises memory_gib by 25%"),
    ],
)
def test_the_headline_names_the_change_the_way_a_reader_would(name, unit, better, factor, phrase):
    base = [100.0, 100.1, 99.9, 100.2, 99.8, 100.0, 100.1, 99.9]
    _, comparison = judged(document({name: (unit, better, base, [v * factor for v in base])}))
    assert render_compare.headline(comparison) == f"This PR {phrase}"


def test_hostile_strings_are_escaped_everywhere_in_the_markdown():
    loaded, comparison = judged(_hostile())
    markdown = render_compare.compare_markdown(loaded, comparison)
    prose, _, code = markdown.partition("```sh\n")
    for raw in ("<script>", "<img", "</details><h1>", "![x]", "**boom**", "\n# heading"):
        assert re.search(r"(?<!\\)" + re.escape(raw), prose) is None, raw
    assert prose.count("<details>") == prose.count("</details>") == 2
    assert "--suite '<img src=x onerror=alert(1)>`# heading' --out" in code
    assert code.count("```") == 1


def test_the_text_report_carries_no_control_characters_from_the_input():
    doc = document(QUIET, failed={"base": 1}, error="\x1b[2J\x1b[31mred\x07")
    doc["suite"] = "suite\x1b]0;title\x07"
    loaded, comparison = judged(doc)
    report = render_compare.compare_text(loaded, comparison)
    assert "\x1b" not in report and "\x07" not in report
    assert report.startswith("unchanged: No change beyond ±2% in 2 metrics (8 rounds per side)")


def test_any_size_of_input_stays_under_githubs_comment_limit():
    names = [f"metric_{i:03d}_" + "n" * 80 for i in range(results.MAX_METRICS)]
    base = [100.0 + i % 3 for i in range(60)]
    metrics = {n: ("ms", "lower", base, [v * (1 + 0.001 * k) for v in base]) for k, n in enumerate(names)}
    doc = document(metrics, failed={"head": 5}, error="E" * 5000)
    doc["suite"] = "s" * 100
    fingerprint = {"env": {f"NCCL_VAR_{i}": "v" * 500 for i in range(300)}}
    doc["head"]["fingerprint"] = fingerprint
    loaded, comparison = judged(doc)
    markdown = render_compare.compare_markdown(loaded, comparison)
    assert len(markdown) < 65_536
    assert "more metrics, left out" in markdown and "more differences" in markdown


def test_blocks_that_do_not_fit_are_left_out_and_the_report_says_so():
    fitted = fit(["a" * 100, "b" * 100, "c" * 50], limit=400)
    assert "b" * 100 not in fitted and "c" * 50 in fitted and "left out" in fitted


hostile_text = st.text(alphabet=st.sampled_from("<>&`*_[]()!#|~\\\n\r\x1b abc/:=\"'"), max_size=60)


@settings(max_examples=60, deadline=None)
@given(suite=hostile_text.filter(str.strip), error=hostile_text, env_value=hostile_text)
def test_no_input_text_can_open_html_or_break_out_of_the_report(suite, error, env_value):
    doc = document(QUIET, failed={"head": 1}, error=error or "x", suite=suite[:100])
    head_fp = copy.deepcopy(FINGERPRINT)
    head_fp["env"]["NCCL_HOSTILE"] = env_value
    doc["head"]["fingerprint"] = head_fp
    loaded, comparison = judged(doc)
    markdown = render_compare.compare_markdown(loaded, comparison)
    prose, fence, code = re.split(r"^(`{3,})sh\n", markdown, maxsplit=1, flags=re.MULTILINE)
    assert re.search(r"(?<!\\)<(?!/?(details|summary|sub)>)", prose) is None
    assert prose.count("<details>") == prose.count("</details>") == 2
    # Only the block's own last line can close it: a closing fence is at most 3 spaces in, then at
    # least as many backticks as the opening one.
    closing = [line for line in code.splitlines() if re.fullmatch(f" {{0,3}}`{{{len(fence)},}} *", line)]
    assert closing == [fence] and code.endswith(f"\n{fence}\n") and "\x1b" not in markdown
    assert "\x1b" not in render_compare.compare_text(loaded, comparison)


def test_the_headline_names_the_mode_the_engine_ran_in():
    base = [9.72, 9.73, 9.71]
    doc = document(
        {
            "cycle_ms": ("ms", "lower", base, [v * 1.089 for v in base]),
            "allreduce_verify_us": ("us", "lower", [60.0, 93.0, 56.0], [61.0, 90.0, 58.0]),
        },
        suite="verify-step",
    )
    doc["metrics"]["cycle_ms"].update(role="headline", mode="piecewise")
    _, comparison = judged(doc)
    assert (
        render_compare.headline(comparison)
        == "This PR makes the EAGLE-3 cycle 8.9% slower with piecewise CUDA graphs"
    )
    doc["rounds"] = [
        r if r["side"] == "base" else {**r, "metrics": {**r["metrics"], "cycle_ms": base[r["index"] // 2]}}
        for r in doc["rounds"]
    ]
    _, comparison = judged(doc)
    assert render_compare.headline(comparison) == (
        "No change beyond ±2% in 1 metric, the EAGLE-3 cycle with "
        "piecewise CUDA graphs among them (3 rounds per side); "
        "1 diagnostic undecided"
    )


@pytest.mark.parametrize("scenario", ["regression", "unchanged", "inconclusive", "error"])
def test_the_first_line_of_the_text_says_the_verdict_once(scenario):
    loaded = results.load(json.dumps(SCENARIOS[scenario]()).encode())
    comparison = stats.decide(loaded)
    first = render_compare.compare_text(loaded, comparison).splitlines()[0]
    assert comparison.verdict == scenario
    assert first.lower().startswith(scenario), first  # a script can read the verdict off the start
    assert not first.lower().startswith(f"{scenario}: {scenario}"), first


@pytest.mark.parametrize(
    "floor,expected", [(1.5, 1.5), (2, 2.0), ("1.5", None), (-1, None), (True, None), (float("inf"), None)]
)
def test_the_speculation_floor_comes_from_the_results_file_if_usable(floor, expected):
    doc = document({"spec_speedup": ("x", "higher", [1.6, 1.61, 1.59], [1.4, 1.41, 1.39])})
    doc["options"] = {"speculation_floor": floor}
    loaded, comparison = judged(json.loads(json.dumps(doc).replace("Infinity", "1e999")))
    assert comparison.speculation.floor == expected
    markdown = render_compare.compare_markdown(loaded, comparison)
    called = "**Speculation break-even.** ⚠️ The speed-up of speculation fell below the configured floor"
    assert (called in markdown) == (expected == 1.5)


def test_an_inconclusive_row_never_shows_an_interval_that_leaves_out_no_change():
    """The verdict is Holm-adjusted over two primary metrics; the plain 95% interval of `a_ms`
    (+3.7% … +17.3%) excluded 0 next to 'inconclusive'. The row shows the test's own interval."""
    doc = document(
        {
            "a_ms": ("ms", "lower", [100.0, 104.0, 97.0, 101.0, 99.0], [110.0, 116.0, 103.0, 117.0, 107.0]),
            "b_ms": ("ms", "lower", [50.0, 55.0, 45.0, 52.0, 48.0], [51.0, 47.0, 54.0, 49.0, 53.0]),
        }
    )
    loaded, comparison = judged(doc)
    markdown = render_compare.compare_markdown(loaded, comparison)
    row = next(line for line in markdown.splitlines() if line.startswith("| `a_ms`"))
    assert "inconclusive" in row and "+3.7%" not in row
    assert re.search(r"\| -0\.5% … \+22\.2% \(99\.5%\) \|", row), row
    [line] = [
        line
        for line in render_compare.compare_text(loaded, comparison).splitlines()
        if line.startswith("a_ms")
    ]
    assert "-0.5% .. +22.2% (99.5%)" in line
