"""A decorator of a function on the map, and the wrapper a decorator factory returns in its place,
count at the mapped function's whole weight: the wrapper runs on every call."""

from __future__ import annotations

from bot.core.risk import callgraph, stepmap_scoring
from bot.sandbox import sample
from tests.core.risk.test_stepmap_scoring import (
    ALL_REDUCE,
    MEASURED,
    STATE,
    base_files,
    evidence,
    score,
    signal,
)

TRACING = "mini_engine/distributed/tracing.py"
TRACING_BASE = '''\
"""Timing spans around the engine's collectives."""

import functools

import torch


def traced(name, sync=False):
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            out = fn(*args, **kwargs)
            if sync and torch.cuda.is_available():
                torch.cuda.synchronize()
            return out

        return wrapper

    return decorator
'''
# The wrapper now synchronises the GPU after every call, and tracing is on unless switched off.
TRACING_SYNCED = TRACING_BASE.replace(
    "def traced(name, sync=False):", "def traced(name, sync=True):"
).replace(
    "            out = fn(*args, **kwargs)\n",
    "            out = fn(*args, **kwargs)\n            torch.cuda.synchronize()\n",
)
STATE_TRACED = sample.PARALLEL_STATE.replace(
    "from .pynccl import PyNcclCommunicator\n",
    "from .pynccl import PyNcclCommunicator\nfrom .tracing import traced\n",
).replace(
    "def tensor_model_parallel_all_reduce(",
    '@traced("allreduce")\ndef tensor_model_parallel_all_reduce(',
)
TRACED_ALL_REDUCE = dict(ALL_REDUCE, line=20)


def test_a_decorator_factorys_wrapper_counts_at_the_mapped_allreduces_weight():
    base = base_files(**{STATE: STATE_TRACED, TRACING: TRACING_BASE})
    after = dict(base, **{TRACING: TRACING_SYNCED})
    plain = score(base, after, None)
    mapped = score(base, after, evidence(base, TRACED_ALL_REDUCE))
    assert plain.level == "low" and mapped.level == "high"
    found = signal(mapped, "map.reaches")
    assert found.weight == 59.6  # the allreduce's own, not three quarters of it
    assert found.description == f"decorates tensor_model_parallel_all_reduce(), which {MEASURED}"
    # the sync alone, in the wrapper's body: per step, at the allreduce's weight
    synced = dict(base, **{TRACING: TRACING_SYNCED.replace("sync=True", "sync=False")})
    wrapper = signal(score(base, synced, evidence(base, TRACED_ALL_REDUCE)), "map.reaches")
    assert (wrapper.function, wrapper.weight) == ("wrapper", 59.6)
    assert wrapper.description == (
        f"is what a decorator puts in place of tensor_model_parallel_all_reduce(), which {MEASURED}"
    )
    assert score(base, synced, evidence(base, TRACED_ALL_REDUCE)).level == "high"
    assert score(base, synced, None).level == "low"


def test_the_wrapper_is_reached_through_each_decorator_that_returns_it():
    base = base_files(**{STATE: STATE_TRACED, TRACING: TRACING_BASE})
    graph = callgraph.build(base)
    root = graph.function(STATE, "tensor_model_parallel_all_reduce")
    assert root is not None
    assert [f.qualname for f in graph.wrappers(root)] == [
        "traced",
        "traced.<locals>.decorator",
        "traced.<locals>.decorator.<locals>.wrapper",
    ]
    for name in ("traced", "decorator", "wrapper"):
        verdict = evidence(base, TRACED_ALL_REDUCE).judge(TRACING, name, [])
        assert verdict is not None and verdict.rule == stepmap_scoring.REACHES and verdict.weight == 59.6


def test_a_function_a_decorator_defines_but_does_not_return_is_not_put_in_place():
    files = {
        "ops.py": (
            "def timed(fn):\n"
            "    def unused():\n"
            "        return 1\n"
            "    def wrapper(*a):\n"
            "        return fn(*a)\n"
            "    return wrapper\n"
            "\n"
            "@timed\n"
            "def forward(x):\n"
            "    return x\n"
        )
    }
    entry = {"path": "ops.py", "function": "forward", "line": 9, "calls_per_step": 4, "host_share": 0.1}
    graph = callgraph.build(files)
    forward = graph.function("ops.py", "forward")
    assert forward is not None
    assert [f.qualname for f in graph.wrappers(forward)] == ["timed", "timed.<locals>.wrapper"]
    assert evidence(files, entry).judge("ops.py", "unused", []).rule == stepmap_scoring.OFF_STEP  # type: ignore[union-attr]
    called = evidence(files, entry).judge("ops.py", "wrapper", [])
    assert called is not None and called.weight == 80.0


def test_a_constant_the_wrapper_reads_counts_at_the_mapped_functions_weight():
    tracing = TRACING_BASE.replace("import torch\n", "import torch\n\n_SYNC = False\n").replace(
        "if sync and", "if (sync or _SYNC) and"
    )
    base = base_files(**{STATE: STATE_TRACED, TRACING: tracing})
    after = dict(base, **{TRACING: tracing.replace("_SYNC = False", "_SYNC = True")})
    found = signal(score(base, after, evidence(base, TRACED_ALL_REDUCE)), "map.read-by")
    assert found.weight == 59.6
    assert found.description.startswith(
        "`_SYNC` is read by traced.<locals>.decorator.<locals>.wrapper(), which is what a decorator puts "
        "in place of tensor_model_parallel_all_reduce(), which runs 32 times"
    )
