"""Kineto / Chrome traces read into profiles: steps, kernels by launch, host gaps, CPU operators, and
one clear line for anything that is not a trace."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.judge import kineto
from tests.core.judge.profile_data import FILL, trace

REAL = Path(__file__).resolve().parent / "traces"


def test_kernels_are_counted_per_step_by_the_step_that_launched_them():
    step = [("gemm_a", 10.0), ("ncclDevKernel_AllReduce", 4.0), ("gemm_a", 10.0)]
    read = kineto.profile_of(trace([step, step, step]), "t.json", "cycle")
    assert (read.device, read.steps, read.what) == ("cuda", 3, "cycle")
    rows = {k.name: (k.family, k.calls, k.us) for k in read.kernels}
    assert rows == {"gemm_a": ("gemm", 2.0, 20.0), "ncclDevKernel_AllReduce": ("communication", 1.0, 4.0)}
    # Each kernel waits 2 µs for the one before: the device idles 3 x 2 µs per step, less the first.
    assert read.idle_us == pytest.approx(4.0)


def test_a_host_synchronisation_is_a_row_and_widens_the_gaps():
    step = [(FILL[0], 5.0), ("gemm_a", 10.0)]
    calm = kineto.profile_of(trace([step] * 2), "t.json")
    synced = kineto.profile_of(trace([step] * 2, syncs_per_step=1, gap=30.0), "t.json")
    assert "cudaDeviceSynchronize" not in {k.name for k in calm.kernels}
    [sync] = [k for k in synced.kernels if k.name == "cudaDeviceSynchronize"]
    assert (sync.family, sync.calls) == ("sync", 1.0)
    assert synced.idle_us > calm.idle_us


def test_device_work_launched_outside_every_step_is_left_out():
    data = trace([[("gemm_a", 10.0)]])
    data["traceEvents"].append(
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 1e6,
            "dur": 1.0,
            "args": {"correlation": 999},
        }
    )
    data["traceEvents"].append(
        {
            "ph": "X",
            "cat": "kernel",
            "name": "late",
            "pid": 0,
            "tid": 7,
            "ts": 1e6 + 3,
            "dur": 1.0,
            "args": {"correlation": 999},
        }
    )
    assert {k.name for k in kineto.profile_of(data, "t.json").kernels} == {"gemm_a"}


def test_a_trace_without_steps_is_one_step_of_all_its_device_work():
    data = trace([[("gemm_a", 10.0), ("Memset (Device)", 1.0)]], category="gpu_memset")
    data["traceEvents"] = [e for e in data["traceEvents"] if not e.get("name", "").startswith("ProfilerStep")]
    read = kineto.profile_of(data, "sglang-TP-0.trace.json")
    assert read.steps == 1 and {k.family for k in read.kernels} == {"memset"}


def test_on_cpu_the_operators_called_in_each_step_are_the_rows():
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 1,
            "ts": 0,
            "dur": 100,
        },
        {"ph": "X", "cat": "cpu_op", "name": "aten::matmul", "pid": 1, "tid": 1, "ts": 5, "dur": 30},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 6, "dur": 28},
        {"ph": "X", "cat": "cpu_op", "name": "aten::zeros", "pid": 1, "tid": 1, "ts": 40, "dur": 20},
        {"ph": "X", "cat": "cpu_op", "name": "aten::zero_", "pid": 1, "tid": 1, "ts": 45, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "other_thread", "pid": 1, "tid": 2, "ts": 40, "dur": 5},
    ]
    read = kineto.profile_of({"traceEvents": events}, "cpu.json")
    assert read.device == "cpu"
    assert {k.name: k.family for k in read.kernels} == {"aten::matmul": "gemm", "aten::zeros": "memset"}
    assert read.idle_us == pytest.approx(50.0)


def test_a_real_h200_trace_reads_the_padding_fill_and_the_nccl_free_single_rank_cycle():
    raw = gzip.decompress((REAL / "h200-slow-commit.trace.json.gz").read_bytes())
    read = kineto.loads(raw, "h200-slow-commit.trace.json", "cycle")
    families = {k.family for k in read.kernels}
    assert read.device == "cuda" and read.steps >= 2
    assert {"gemm", "attention", "memset"} <= families
    fills = [k for k in read.kernels if "FillFunctor" in k.name]
    assert fills and fills[0].calls >= 32


@pytest.mark.parametrize(
    "data,expected",
    [
        ("[1, 2", "not a JSON trace"),
        ('{"traceEvents": 3}', "no 'traceEvents' list"),
        ('"text"', "no 'traceEvents' list"),
        (
            '{"traceEvents": [{"ph": "X", "name": "python_function", "ts": 1, "dur": 2}]}',
            "no kernels and no operators",
        ),
    ],
)
def test_what_is_not_a_trace_is_one_line(data, expected):
    with pytest.raises(kineto.TraceError, match=expected) as caught:
        kineto.loads(data, "x.json")
    assert "\n" not in str(caught.value)


EVENT = st.fixed_dictionaries(
    {
        "ph": st.sampled_from(["X", "M", "i", 3]),
        "cat": st.sampled_from(
            ["kernel", "cpu_op", "cuda_runtime", "user_annotation", "gpu_memset", None, 7]
        ),
        "name": st.one_of(
            st.sampled_from(["ProfilerStep#1", "gemm", "aten::mm", "cudaDeviceSynchronize"]),
            st.text(max_size=8),
            st.integers(),
        ),
        "ts": st.one_of(
            st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6), st.text(max_size=3)
        ),
        "dur": st.one_of(st.floats(-5, 1e4), st.integers(-5, 10**4), st.none()),
        "pid": st.sampled_from([0, 1, "Spans"]),
        "tid": st.sampled_from([1, 7, "x"]),
        "args": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {"correlation": st.one_of(st.integers(0, 5), st.booleans(), st.text(max_size=2))}
            ),
        ),
    }
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.lists(EVENT, max_size=30).map(lambda events: {"traceEvents": events}),
        st.recursive(
            st.none() | st.integers() | st.text(max_size=5),
            lambda inner: (
                st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=10,
        ),
    )
)
def test_any_json_is_a_profile_or_one_trace_error_line(data):
    try:
        read = kineto.loads(json.dumps(data), "fuzz.json")
    except kineto.TraceError as error:
        assert "\n" not in str(error)
    else:
        assert read.steps >= 1 and all(k.calls >= 0 and k.us >= 0 for k in read.kernels)
        assert read.idle_us is None or read.idle_us >= 0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from(["gemm_a", "nccl_b", FILL[0]]), st.floats(0.5, 50.0)),
            min_size=1,
            max_size=6,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_whatever_the_steps_launch_is_counted_exactly_once(steps):
    read = kineto.profile_of(trace(steps), "t.json")
    assert read.steps == len(steps)
    launched = sum(len(step) for step in steps)
    assert sum(k.calls for k in read.kernels) * read.steps == pytest.approx(launched)
    total = sum(duration for step in steps for _, duration in step)
    assert sum(k.us for k in read.kernels) * read.steps == pytest.approx(total)


# ---------------------------------------------------------------- the repository's frames


def _call(name, ts, dur, caller=None, defines=None, tid=1):
    args = {}
    if caller:
        args["perfbot.caller"] = dict(zip(("path", "line", "function"), caller, strict=True))
    if defines:
        args["perfbot.function"] = dict(zip(("path", "line", "function"), defines, strict=True))
    return {
        "ph": "X",
        "cat": "python_function",
        "name": name,
        "pid": 1,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def _op(name, ts, dur, tid=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


PS = "engine/parallel_state.py"


def _annotated_cpu_trace():
    """Two steps: ``all_reduce`` (repository) calls ``_pad`` (repository), which calls
    ``torch.zeros`` at line 22; an ``aten::mm`` runs outside every call from the repository."""
    events = []
    for step, t0 in enumerate((0.0, 1000.0), start=1):
        events += [
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": 1,
                "tid": 1,
                "ts": t0,
                "dur": 400.0,
            },
            _call(
                "engine/parallel_state.py(28): all_reduce",
                t0 + 10,
                200,
                caller=("model.py", 7, "forward"),
                defines=(PS, 28, "all_reduce"),
            ),
            _call(
                "engine/parallel_state.py(20): _pad",
                t0 + 20,
                100,
                caller=(PS, 30, "all_reduce"),
                defines=(PS, 20, "_pad"),
            ),
            _call("<built-in method zeros>", t0 + 30, 40, caller=(PS, 22, "_pad")),
            _op("aten::zeros", t0 + 31, 30),
            _op("aten::slice", t0 + 80, 10),  # inside _pad, outside any call it made
            _op("aten::mm", t0 + 300, 50),
        ]
    return {"traceEvents": events}


def test_each_operator_names_the_line_of_the_repository_that_launched_it():
    read = kineto.traced(_annotated_cpu_trace(), "t.json", "cycle")
    sites = {
        k.name: [(s.path, s.line, s.function, s.calls) for s in k.sites or []] for k in read.profile.kernels
    }
    assert sites["aten::zeros"] == [(PS, 22, "_pad", 1.0)]
    # Python syntax (a slice) makes no call: the line that called the function running it is named.
    assert sites["aten::slice"] == [(PS, 30, "all_reduce", 1.0)]
    assert sites["aten::mm"] == []


def test_the_map_counts_the_repositorys_functions_and_who_launched_each_family():
    read = kineto.traced(_annotated_cpu_trace(), "t.json", "cycle")
    built = read.step_map("a" * 40, "verify")
    assert built is not None and (built.steps, built.source, built.step) == (2, "torch.profiler", "cycle")
    pad = built.function_at(PS, "_pad")
    assert pad is not None and (pad.line, pad.calls_per_step) == (20, 1.0)
    assert pad.host_share == pytest.approx(100 / 400)
    assert built.function_at(PS, "all_reduce").host_share == pytest.approx(200 / 400)
    memset = built.kernel("memset")
    assert memset is not None and memset.launches_per_step == 1.0
    assert [(s.path, s.line, s.per_step) for s in memset.launched_by] == [(PS, 22, 1.0)]
    assert built.kernel("gemm").launched_by == ()


def test_a_recursive_function_counts_every_call_and_its_time_once():
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 1,
            "ts": 0,
            "dur": 100.0,
        },
        _call("walk", 0, 80, caller=("a.py", 3, "main"), defines=("a.py", 10, "walk")),
        _call("walk", 10, 50, caller=("a.py", 12, "walk"), defines=("a.py", 10, "walk")),
        _op("aten::add", 20, 5),
    ]
    built = kineto.traced({"traceEvents": events}, "t.json").step_map("b" * 40, "s")
    walk = built.function_at("a.py", "walk")
    assert (walk.calls_per_step, walk.host_share) == (2.0, pytest.approx(0.8))


def test_a_device_kernel_is_attributed_through_its_launch_and_a_sync_by_itself():
    from tests.core.judge.profile_data import trace

    data = trace([[("gemm_a", 10.0)]] * 2, syncs_per_step=1)
    launches = [e for e in data["traceEvents"] if e.get("cat") == "cuda_runtime"]
    for launch in launches:
        line = 40 if launch["name"] == "cudaLaunchKernel" else 41
        data["traceEvents"].append(
            _call("<built-in>", launch["ts"] - 0.1, launch["dur"] + 0.2, caller=("m.py", line, "step"))
        )
    read = kineto.traced(data, "t.json")
    rows = {k.name: [(s.path, s.line, s.calls) for s in k.sites or []] for k in read.profile.kernels}
    assert rows == {"gemm_a": [("m.py", 40, 1.0)], "cudaDeviceSynchronize": [("m.py", 41, 1.0)]}
    assert [s.line for s in read.step_map("c" * 40, "s").kernel("sync").launched_by] == [41]


@pytest.mark.parametrize(
    "annotation",
    [
        {"path": "/abs/x.py", "line": 3, "function": "f"},
        {"path": "../x.py", "line": 3, "function": "f"},
        {"path": "venv/site-packages/torch/x.py", "line": 3, "function": "f"},
        {"path": "x.py", "line": -1, "function": "f"},
        {"path": "x.py", "line": 3, "function": "f\u202e"},
        {"path": "x.py", "line": "3", "function": "f"},
        "x.py:3",
    ],
)
def test_an_annotation_that_names_no_frame_of_the_repository_is_ignored(annotation):
    data = _annotated_cpu_trace()
    for event in data["traceEvents"]:
        if event.get("cat") == "python_function":
            event["args"] = {"perfbot.caller": annotation, "perfbot.function": annotation}
    read = kineto.traced(data, "t.json")
    assert all(k.sites is None for k in read.profile.kernels)
    assert read.step_map("a" * 40, "s") is None


def test_a_trace_without_annotations_has_no_map_and_reads_as_before():
    data = _annotated_cpu_trace()
    for event in data["traceEvents"]:
        event.pop("args", None)
    read = kineto.traced(data, "t.json")
    assert read.step_map("a" * 40, "s") is None
    assert read.profile == kineto.profile_of(data, "t.json")
    assert all(k.sites is None for k in read.profile.kernels)
    assert "sites" not in read.profile.model_dump(mode="json")["kernels"][0]


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["path", "line", "function", "x"]), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(caller=_json_values, defines=_json_values)
def test_any_annotation_is_a_frame_or_ignored_never_an_error(caller, defines):
    data = _annotated_cpu_trace()
    for event in data["traceEvents"]:
        if event.get("cat") == "python_function":
            event["args"] = {"perfbot.caller": caller, "perfbot.function": defines}
    read = kineto.traced(data, "t.json")
    built = read.step_map("a" * 40, "s")
    assert built is None or all(f.host_share <= 1 for f in built.functions)
