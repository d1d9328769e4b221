"""Results files: what is accepted, and one clear line for everything that is not."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.judge import results
from tests.core.judge.results_data import EAGLE3, document, text


def load_doc(doc: dict) -> results.Results:
    return results.load(json.dumps(doc), "results.json")


def test_a_valid_file_loads_and_gives_values_in_round_order():
    loaded = results.load(text(EAGLE3), "results.json")
    assert loaded.suite == "sglang-eagle3"
    assert loaded.values("base", "verify_ms") == EAGLE3["verify_ms"][2]
    assert loaded.values("head", "verify_ms") == EAGLE3["verify_ms"][3]


def test_failed_rounds_are_kept_but_their_values_are_dropped_unread():
    doc = document(EAGLE3, failed={"head": 2})
    doc["rounds"][-1]["metrics"] = {"verify_ms": float("nan"), "not_declared": -1}
    loaded = load_doc(doc)
    assert len(loaded.failures("head")) == 2
    assert all(r.metrics == {} for r in loaded.failures("head"))
    assert loaded.values("head", "verify_ms") == EAGLE3["verify_ms"][3]


def test_a_whole_traceback_in_an_error_is_cut_short():
    doc = document(EAGLE3, failed={"base": 1}, error="Traceback\n" + "x" * 100_000)
    error = load_doc(doc).failures("base")[0].error
    assert error is not None and len(error) <= results.MAX_ERROR_CHARS + 1


def test_the_runner_s_extra_keys_are_accepted_and_its_status_kept():
    doc = document(EAGLE3)
    doc.update(status="stopped", error="timeout", warmups=[], options={"rounds": 10})
    loaded = load_doc(doc)
    assert (loaded.status, loaded.error) == ("stopped", "timeout")


def _mutated(change) -> dict:
    doc = document(EAGLE3)
    change(doc)
    return doc


BAD_DOCUMENTS = {
    "another schema version": (lambda d: d.update(schema="perfbot.results/2"), "unsupported schema"),
    "no schema": (lambda d: d.pop("schema"), "no 'schema' key"),
    "a NaN value": (lambda d: d["rounds"][0]["metrics"].update(verify_ms=float("nan")), "finite"),
    "an infinite value": (lambda d: d["rounds"][0]["metrics"].update(verify_ms=float("inf")), "finite"),
    "a negative value": (lambda d: d["rounds"][0]["metrics"].update(verify_ms=-1.0), ">= 0"),
    "a string value": (lambda d: d["rounds"][0]["metrics"].update(verify_ms="17"), "number"),
    "a boolean value": (lambda d: d["rounds"][0]["metrics"].update(verify_ms=True), "number"),
    "no head side": (lambda d: d.pop("head"), "head"),
    "no head rounds": (
        lambda d: d.update(rounds=[r for r in d["rounds"] if r["side"] == "base"]),
        "no rounds for the head side",
    ),
    "an undeclared metric": (lambda d: d["rounds"][0]["metrics"].update(bogus=1.0), "not declared"),
    "a round twice": (lambda d: d["rounds"].append(dict(d["rounds"][0])), "appears twice"),
    "a bad sha": (lambda d: d["base"].update(sha="not a sha"), "base.sha"),
    "a bad direction": (lambda d: d["metrics"]["verify_ms"].update(better="faster"), "better"),
    "a 1 MB metric name": (
        lambda d: d["metrics"].update({"x" * 2**20: {"unit": "ms", "better": "lower"}}),
        "metric names are 1-100 characters",
    ),
    "an HTML metric name": (
        lambda d: d["metrics"].update({"<img src=x>": {"unit": "ms", "better": "lower"}}),
        "metric names",
    ),
    "a long unit": (lambda d: d["metrics"]["verify_ms"].update(unit="u" * 1000), "unit"),
    "a long suite": (lambda d: d.update(suite="s" * 10_000), "suite"),
    "an integer too large for a float": (
        lambda d: d["rounds"][0]["metrics"].update(verify_ms=10**400),
        "finite",
    ),
    "a spread too large for a float": (
        lambda d: d["rounds"][0].update(spread={"verify_ms": {"se": 10**400, "calls": 3}}),
        "spread",
    ),
}


@pytest.mark.parametrize("change,expected", BAD_DOCUMENTS.values(), ids=BAD_DOCUMENTS.keys())
def test_a_bad_document_is_one_short_line_naming_the_problem(change, expected):
    with pytest.raises(results.ResultsError) as caught:
        load_doc(_mutated(change))
    message = str(caught.value)
    assert expected in message
    assert message.startswith("results.json: ")
    assert "\n" not in message and len(message) < 400


@pytest.mark.parametrize(
    "raw,expected",
    [
        (text(EAGLE3)[:500], "not valid JSON (truncated?)"),
        ("", "empty file"),
        ("[1, 2]", "must be a JSON object, not an array"),
        ('"perfbot"', "not a string"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("[" * 100_000, "nested too deeply"),
        # Python refuses to read integers of over 4,300 digits (a ValueError, not a JSONDecodeError).
        (text(EAGLE3).replace("17.1", "9" * 5000, 1), "an integer of more than 4300 digits"),
    ],
)
def test_unreadable_text_is_one_line_too(raw, expected):
    with pytest.raises(results.ResultsError, match="^results.json: ") as caught:
        results.load(raw, "results.json")
    assert expected in str(caught.value)


def test_hostile_text_in_an_error_message_is_clipped_and_printable():
    doc = _mutated(
        lambda d: d["metrics"].update({"\x1b[31m" + "y" * 5000: {"unit": "ms", "better": "lower"}})
    )
    with pytest.raises(results.ResultsError) as caught:
        load_doc(doc)
    message = str(caught.value)
    assert "\x1b" not in message and len(message) < 300


def test_a_fingerprint_too_big_or_too_deep_is_refused():
    deep: dict = {}
    node = deep
    for _ in range(20):
        node["k"] = {}
        node = node["k"]
    with pytest.raises(results.ResultsError, match="deeper"):
        load_doc(_mutated(lambda d: d["base"].update(fingerprint=deep)))
    wide = {f"k{i}": i for i in range(results.MAX_FINGERPRINT_LEAVES + 1)}
    with pytest.raises(results.ResultsError, match="more than"):
        load_doc(_mutated(lambda d: d["head"].update(fingerprint=wide)))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_either_load_or_raise_a_results_error(data):
    try:
        results.load(data, "fuzz")
    except results.ResultsError as error:
        assert "\n" not in str(error)


JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    key=st.sampled_from(["suite", "repo", "base", "head", "metrics", "rounds", "started_at"]),
    value=JSON,
    round_key=st.sampled_from(["side", "index", "ok", "error", "metrics"]),
)
def test_any_value_anywhere_either_loads_or_raises_a_results_error(key, value, round_key):
    for change in (lambda d: d.update({key: value}), lambda d: d["rounds"][0].update({round_key: value})):
        try:
            load_doc(_mutated(change))
        except results.ResultsError as error:
            assert "\n" not in str(error)


def test_roles_modes_and_round_spreads_are_read_and_each_round_s_standard_errors_line_up():
    doc = document({"cycle_ms": EAGLE3["cycle_ms"], "draft_ms": EAGLE3["draft_ms"]}, failed={"head": 1})
    doc["metrics"]["cycle_ms"].update(role="headline", mode="piecewise")
    for position, round_ in enumerate(doc["rounds"]):
        if round_["ok"]:
            round_["spread"] = {"cycle_ms": {"se": 0.01 * (position + 1), "calls": 100}}
    loaded = load_doc(doc)
    assert (loaded.role("cycle_ms"), loaded.metrics["cycle_ms"].mode) == ("headline", "piecewise")
    assert loaded.role("draft_ms") == "diagnostic"  # undeclared: the built-in suites' default
    base_rounds = [r for r in doc["rounds"] if r["side"] == "base"]
    assert loaded.spreads("base", "cycle_ms") == [r["spread"]["cycle_ms"]["se"] for r in base_rounds]
    assert loaded.spreads("base", "draft_ms") is None


def test_unset_roles_modes_and_spreads_are_left_out_of_a_written_file():
    loaded = load_doc(document(EAGLE3))
    written = loaded.model_dump(mode="json", by_alias=True)
    assert written["metrics"]["cycle_ms"] == {"unit": "ms", "better": "lower"}
    assert "spread" not in written["rounds"][0]


def test_a_metric_name_decides_the_role_only_when_the_file_does_not():
    assert [
        results.role_of(n) for n in ("cycle_ms", "verify_piecewise_ms", "allreduce_verify_us", "mine")
    ] == ["headline", "primary", "diagnostic", "primary"]


@pytest.mark.parametrize(
    "spread,expected",
    [
        ({"not_measured": {"se": 0.1, "calls": 10}}, "did not measure"),
        ({"verify_ms": {"se": -0.1, "calls": 10}}, "greater than or equal to 0"),
        ({"verify_ms": {"se": 0.1, "calls": 0}}, "greater than or equal to 1"),
    ],
)
def test_a_spread_that_does_not_fit_its_round_is_refused_in_one_line(spread, expected):
    doc = document(EAGLE3)
    doc["rounds"][0]["spread"] = spread
    with pytest.raises(results.ResultsError, match=expected) as refused:
        load_doc(doc)
    assert "\n" not in str(refused.value)


def _step_map(commit: str) -> dict:
    return {
        "schema": 1,
        "commit": commit,
        "suite": "sglang-eagle3",
        "step": "cycle",
        "steps": 3,
        "source": "torch.profiler",
        "functions": [
            {
                "path": "engine/ps.py",
                "function": "all_reduce",
                "line": 4,
                "calls_per_step": 2.0,
                "host_share": 0.5,
            }
        ],
        "kernels": [
            {
                "family": "memset",
                "launches_per_step": 2.0,
                "launched_by": [
                    {"path": "engine/ps.py", "function": "all_reduce", "line": 6, "per_step": 2.0}
                ],
            }
        ],
    }


def test_a_step_map_section_loads_and_reads_back_through_the_map_parser():
    from tests.core.judge.results_data import BASE_SHA

    loaded = load_doc({**document(EAGLE3), "step_map": _step_map(BASE_SHA)})
    assert loaded.map is not None and loaded.map.function_at("engine/ps.py", "all_reduce").line == 4
    assert load_doc(document(EAGLE3)).map is None
    dumped = json.loads(loaded.model_dump_json(by_alias=True))
    assert dumped["step_map"] == _step_map(BASE_SHA)
    assert "step_map" not in json.loads(load_doc(document(EAGLE3)).model_dump_json(by_alias=True))


@pytest.mark.parametrize(
    "spoil,message",
    [
        (lambda m: m.update(commit="f" * 40), "step_map.commit: the map is of neither side's commit"),
        (
            lambda m: m["functions"][0].update(path="/etc/x.py"),
            r"step_map: functions\[0\]\.path: must be a path",
        ),
        (lambda m: m.update(steps="3"), "step_map: steps: must be an integer"),
    ],
)
def test_a_bad_step_map_is_one_line_naming_it(spoil, message):
    from tests.core.judge.results_data import BASE_SHA

    section = _step_map(BASE_SHA)
    spoil(section)
    with pytest.raises(results.ResultsError, match=message):
        load_doc({**document(EAGLE3), "step_map": section})
