"""The per-step map's parser: a valid map reads back as written; anything else is one StepMapError
line naming the field, never another exception."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core import stepmap
from bot.core.stepmap import StepMapError

SHA = "a" * 40


def sample() -> dict:
    return {
        "schema": 1,
        "commit": SHA,
        "suite": "verify",
        "step": "verify step",
        "steps": 4,
        "source": "sys.monitoring",
        "functions": [
            {
                "path": "engine/parallel_state.py",
                "function": "GroupCoordinator.all_reduce",
                "line": 12,
                "calls_per_step": 2.0,
                "host_share": 0.25,
            },
            {
                "path": "engine/model.py",
                "function": "Model.forward",
                "line": 40,
                "calls_per_step": 1.0,
                "host_share": 0.9,
            },
        ],
        "kernels": [
            {
                "family": "communication",
                "launches_per_step": 2.0,
                "launched_by": [
                    {
                        "path": "engine/parallel_state.py",
                        "function": "GroupCoordinator.all_reduce",
                        "line": 15,
                        "per_step": 2.0,
                    }
                ],
            },
        ],
    }


def test_a_map_reads_back_as_written():
    parsed = stepmap.parse(sample())
    assert parsed.to_dict() == sample()
    assert parsed.function_at("engine/model.py", "Model.forward").calls_per_step == 1.0
    assert parsed.function_at("engine/model.py", "missing") is None
    assert parsed.kernel("communication").launched_by[0].line == 15
    assert parsed.kernel("gemm") is None


def test_a_results_file_yields_its_section():
    results = {"schema": "perfbot.results/1", "suite": "verify", "step_map": sample()}
    assert stepmap.parse(results) == stepmap.parse(sample())
    assert stepmap.from_results(results) == stepmap.parse(sample())
    assert stepmap.from_results({"schema": "perfbot.results/1"}) is None
    assert stepmap.from_results({"step_map": None}) is None


def test_a_bad_section_in_a_results_file_names_where():
    results = {"schema": "perfbot.results/1", "step_map": {**sample(), "steps": 0}}
    with pytest.raises(StepMapError, match=r"^step_map\.steps: must be an integer"):
        stepmap.from_results(results)


@pytest.mark.parametrize(
    "path",
    [
        "/abs/engine.py",
        "../outside.py",
        "engine/../../x.py",
        "C:/engine.py",
        "engine\\model.py",
        "venv/lib/python3.12/site-packages/torch/nn.py",
        "usr/lib/python3/dist-packages/x.py",
        "a//b.py",
        "./engine.py",
        "engine/\nmodel.py",
        "",
    ],
)
def test_only_paths_of_the_repository_pass(path):
    data = sample()
    data["functions"][0]["path"] = path
    with pytest.raises(StepMapError, match=r"^functions\[0\]\.path: "):
        stepmap.parse(data)


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda d: d.update(schema=2), r"^schema: must be 1"),
        (lambda d: d.update(schema=True), r"^schema: must be 1"),
        (lambda d: d.update(commit="abc"), r"^commit: must be a 40-hex"),
        (lambda d: d.update(source="perf"), r"^source: must be one of"),
        (lambda d: d.update(steps=1.5), r"^steps: must be an integer"),
        (lambda d: d.update(functions={}), r"^functions: must be an array"),
        (
            lambda d: d["functions"][1].update(host_share=1.5),
            r"^functions\[1\]\.host_share: must be at most 1",
        ),
        (
            lambda d: d["functions"][1].update(calls_per_step=-1),
            r"^functions\[1\]\.calls_per_step: must be a finite",
        ),
        (lambda d: d["functions"][1].update(calls_per_step=float("nan")), r"^functions\[1\]\.calls_per_step"),
        (lambda d: d["functions"][1].update(calls_per_step=10**400), r"^functions\[1\]\.calls_per_step"),
        (lambda d: d["functions"][1].update(line=True), r"^functions\[1\]\.line: must be an integer"),
        (lambda d: d["functions"].append(dict(d["functions"][0])), r"^functions: function .* appears twice"),
        (lambda d: d["kernels"].append(copy.deepcopy(d["kernels"][0])), r"^kernels: family .* appears twice"),
        (
            lambda d: d["kernels"][0]["launched_by"][0].update(per_step="2"),
            r"^kernels\[0\]\.launched_by\[0\]\.per_step: must be a number",
        ),
        (lambda d: d["kernels"][0].update(family="x\u202ey"), r"^kernels\[0\]\.family: holds control"),
        (
            lambda d: d["kernels"][0].update(launched_by=[{}] * 51),
            r"^kernels\[0\]\.launched_by: more than 50",
        ),
    ],
)
def test_each_problem_is_one_line_naming_the_field(mutate, message):
    data = sample()
    mutate(data)
    with pytest.raises(StepMapError, match=message) as raised:
        stepmap.parse(data)
    assert "\n" not in str(raised.value)


def test_a_commit_is_kept_in_lower_case():
    assert stepmap.parse({**sample(), "commit": "A" * 40}).commit == SHA


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_any_json_is_a_map_or_one_step_map_error(data):
    try:
        stepmap.parse(data)
    except StepMapError as error:
        assert "\n" not in str(error)


_paths = st.lists(
    st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,11}", fullmatch=True).filter(lambda p: p not in (".", "..")),
    min_size=1,
    max_size=4,
).map("/".join)
_names = st.text(st.characters(codec="utf-8", categories=("L", "N", "P")), min_size=1, max_size=30)
_amounts = st.floats(min_value=0, max_value=1e9, allow_nan=False)


@st.composite
def _maps(draw) -> dict:
    functions = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "path": _paths,
                    "function": _names,
                    "line": st.integers(0, 10**6),
                    "calls_per_step": _amounts,
                    "host_share": st.floats(0, 1),
                }
            ),
            max_size=5,
            unique_by=lambda f: (f["path"], f["function"]),
        )
    )
    kernels = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "family": _names,
                    "launches_per_step": _amounts,
                    "launched_by": st.lists(
                        st.fixed_dictionaries(
                            {
                                "path": _paths,
                                "function": _names,
                                "line": st.integers(0, 10**6),
                                "per_step": _amounts,
                            }
                        ),
                        max_size=3,
                        unique_by=lambda s: (s["path"], s["function"], s["line"]),
                    ),
                }
            ),
            max_size=4,
            unique_by=lambda k: k["family"],
        )
    )
    return {
        "schema": 1,
        "commit": draw(st.from_regex(r"[0-9a-f]{40}", fullmatch=True)),
        "suite": draw(_names),
        "step": draw(_names),
        "steps": draw(st.integers(1, 1000)),
        "source": draw(st.sampled_from(stepmap.SOURCES)),
        "functions": functions,
        "kernels": kernels,
    }


@settings(max_examples=150, deadline=None)
@given(_maps())
def test_every_valid_map_survives_json_and_reads_back_the_same(data):
    parsed = stepmap.parse(json.loads(json.dumps(data)))
    assert stepmap.parse(json.loads(json.dumps(parsed.to_dict()))) == parsed
    assert parsed.to_dict() == {
        **data,
        "functions": [
            {**f, "calls_per_step": float(f["calls_per_step"]), "host_share": float(f["host_share"])}
            for f in data["functions"]
        ],
        "kernels": [
            {
                **k,
                "launches_per_step": float(k["launches_per_step"]),
                "launched_by": [{**s, "per_step": float(s["per_step"])} for s in k["launched_by"]],
            }
            for k in data["kernels"]
        ],
    }


@settings(max_examples=200, deadline=None)
@given(_maps(), st.data())
def test_a_valid_map_with_one_field_spoiled_is_refused_by_name(data, draw):
    key = draw.draw(
        st.sampled_from(["schema", "commit", "suite", "step", "steps", "source", "functions", "kernels"])
    )
    data[key] = draw.draw(
        st.sampled_from([None, -1, "", [], {}, 1.5]).filter(
            lambda v: not (key == "functions" or key == "kernels") or v != []
        )
    )
    with pytest.raises(StepMapError, match=rf"^{key}: "):
        stepmap.parse(data)


# -- the lines that ran (optional: maps made before them have none)


def test_a_map_without_lines_reads_as_one_that_did_not_record_them():
    mapped = stepmap.parse(sample())
    assert mapped.lines is None and mapped.ran("engine/model.py", 40) is None
    assert "lines" not in mapped.to_dict()


def test_lines_read_back_as_written_and_say_which_lines_ran():
    data = dict(sample(), lines={"engine/model.py": [[3, 3], [40, 44]], "engine/parallel_state.py": []})
    mapped = stepmap.parse(data)
    assert mapped.lines == {"engine/model.py": ((3, 3), (40, 44)), "engine/parallel_state.py": ()}
    assert [mapped.ran("engine/model.py", n) for n in (2, 3, 4, 39, 40, 44, 45)] == [
        False,
        True,
        False,
        False,
        True,
        True,
        False,
    ]
    assert mapped.ran("engine/parallel_state.py", 12) is False  # recorded, none ran
    assert mapped.ran("engine/other.py", 1) is None  # not recorded
    assert stepmap.parse(json.loads(json.dumps(mapped.to_dict()))) == mapped
    assert stepmap.parse(dict(sample(), lines=None)).lines is None
    hash(mapped)  # a map stays hashable with its lines


@pytest.mark.parametrize(
    "lines,message",
    [
        ([], r"^lines: must be a JSON object, got an array"),
        ({"/abs.py": [[1, 1]]}, r"^lines\['/abs.py'\]: must name a path relative"),
        ({"a.py": {}}, r"^lines\['a.py'\]: must be an array of \[first, last\]"),
        ({"a.py": [[2, 1]]}, r"^lines\['a.py'\]\[0\]: must be \[first, last\]"),
        ({"a.py": [[0, 1]]}, r"^lines\['a.py'\]\[0\]: must be \[first, last\]"),
        ({"a.py": [[1, 10_000_001]]}, r"^lines\['a.py'\]\[0\]: must be \[first, last\]"),
        ({"a.py": [[1, True]]}, r"^lines\['a.py'\]\[0\]: must be \[first, last\]"),
        ({"a.py": [[1, 2, 3]]}, r"^lines\['a.py'\]\[0\]: must be \[first, last\]"),
        ({"a.py": [7]}, r"^lines\['a.py'\]\[0\]: must be \[first, last\]"),
        ({"a.py": [[1, 4], [4, 5]]}, r"^lines\['a.py'\]\[1\]: ranges must be sorted and apart"),
        ({"a.py": [[5, 6], [1, 2]]}, r"^lines\['a.py'\]\[1\]: ranges must be sorted and apart"),
    ],
)
def test_each_problem_of_the_lines_is_one_line_naming_the_field(lines, message):
    with pytest.raises(StepMapError, match=message) as raised:
        stepmap.parse(dict(sample(), lines=lines))
    assert "\n" not in str(raised.value)


def test_lines_are_capped_in_ranges_over_all_files():
    half = stepmap.MAX_LINE_RANGES // 2
    fits = {
        "a.py": [[2 * n + 1, 2 * n + 1] for n in range(half)],
        "b.py": [[2 * n + 1, 2 * n + 1] for n in range(half)],
    }
    assert len(stepmap.parse(dict(sample(), lines=fits)).lines["b.py"]) == half  # type: ignore[index]
    over = dict(fits, **{"c.py": [[1, 1]]})
    with pytest.raises(StepMapError, match=rf"^lines: more than {stepmap.MAX_LINE_RANGES} line ranges"):
        stepmap.parse(dict(sample(), lines=over))


def test_with_lines_checks_a_recorders_lines_as_a_maps_own():
    mapped = stepmap.parse(sample())
    assert stepmap.with_lines(mapped, {"a.py": [[1, 2]]}).lines == {"a.py": ((1, 2),)}
    with pytest.raises(StepMapError, match=r"^lines\['a.py'\]\[0\]"):
        stepmap.with_lines(mapped, {"a.py": [[2, 1]]})


def spoiled(**fields) -> dict:
    data = sample()
    data.update(fields)
    return data


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"commit": "a" * 41}, "commit: longer than 40 characters"),
        ({"suite": "s" * 101}, "suite: longer than 100 characters"),
        ({"step": "s" * 101}, "step: longer than 100 characters"),
        ({"steps": 10**9 + 1}, "steps: must be an integer 1-1000000000, got 1000000001"),
        ({"steps": 0}, "steps: must be an integer 1-1000000000, got 0"),
    ],
)
def test_each_bound_refuses_one_past_it(fields, message):
    with pytest.raises(StepMapError, match=f"^{message}$"):
        stepmap.parse(spoiled(**fields))


def test_each_bound_takes_its_own_value():
    mapped = stepmap.parse(spoiled(suite="s" * 100, step="t" * 100, steps=10**9))
    assert (mapped.suite, mapped.step, mapped.steps) == ("s" * 100, "t" * 100, 10**9)
    assert stepmap.parse(spoiled(steps=1)).steps == 1


def test_a_range_up_to_the_last_line_a_map_may_name_holds_its_first_line():
    mapped = stepmap.parse(spoiled(lines={"a.py": [[1, 2], [5, stepmap.MAX_LINE]]}))
    assert mapped.ran("a.py", 5) and mapped.ran("a.py", stepmap.MAX_LINE)
    assert not mapped.ran("a.py", 4) and mapped.ran("a.py", 2)


def test_a_function_or_launch_site_may_be_on_the_last_line_a_map_may_name():
    data = sample()
    data["functions"][0]["line"] = stepmap.MAX_LINE
    data["kernels"][0]["launched_by"][0]["line"] = 0
    mapped = stepmap.parse(data)
    assert mapped.functions[0].line == stepmap.MAX_LINE and mapped.kernels[0].launched_by[0].line == 0
    data["functions"][0]["line"] = stepmap.MAX_LINE + 1
    with pytest.raises(
        StepMapError, match=r"^functions\[0\]\.line: must be an integer 0-10000000, got 10000001$"
    ):
        stepmap.parse(data)
