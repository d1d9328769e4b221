"""Data that flows into the step: a config default, an environment default or a flag a module reads
at import, copied into module-level constants that a function on the map reads, counts as that
function, with the reason naming the chain."""

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

CONFIG = "mini_engine/config.py"
ENVS = "mini_engine/envs.py"
CONFIG_BASE = '''\
"""The engine's settings."""

from dataclasses import dataclass


@dataclass
class CacheConfig:
    block_size: int = 16


@dataclass
class EngineConfig:
    tp_size: int = 1
    sync_allreduce: bool = False
'''
ENVS_BASE = '''\
"""Environment switches, read once at import."""

import os

ENGINE_SYNC = os.environ.get("ENGINE_SYNC", "0") == "1"
'''
ALL_REDUCE_BODY = "    return get_tp_communicator().all_reduce(input_)\n"
# The config default, copied into a constant at import, read by the allreduce on every call.
STATE_CONFIGURED = sample.PARALLEL_STATE.replace(
    "from .pynccl import PyNcclCommunicator\n",
    "from ..config import EngineConfig\nfrom .pynccl import PyNcclCommunicator\n\n_SYNC = EngineConfig().sync_allreduce\n",
).replace(
    ALL_REDUCE_BODY,
    "    out = get_tp_communicator().all_reduce(input_)\n    if _SYNC:\n        torch.cuda.synchronize()\n    return out\n",
)
# The environment switch, read through the module (``envs.ENGINE_SYNC``) into a flag at import.
STATE_ENVIRONED = sample.PARALLEL_STATE.replace(
    "from .pynccl import PyNcclCommunicator\n",
    "from .. import envs\nfrom .pynccl import PyNcclCommunicator\n\n"
    "if envs.ENGINE_SYNC:\n    _AFTER = torch.cuda.synchronize\nelse:\n    _AFTER = None\n",
).replace(
    ALL_REDUCE_BODY,
    "    out = get_tp_communicator().all_reduce(input_)\n    if _AFTER is not None:\n        _AFTER()\n    return out\n",
)
ALL_REDUCE_CONFIGURED = dict(ALL_REDUCE, line=21)


def test_a_config_default_copied_into_a_constant_of_another_module_counts_as_its_mapped_reader():
    base = base_files(**{STATE: STATE_CONFIGURED, CONFIG: CONFIG_BASE})
    after = dict(
        base, **{CONFIG: CONFIG_BASE.replace("sync_allreduce: bool = False", "sync_allreduce: bool = True")}
    )
    plain = score(base, after, None)
    mapped = score(base, after, evidence(base, ALL_REDUCE_CONFIGURED))
    found = signal(mapped, "map.read-by")
    assert found.description == (
        f"the default of `EngineConfig.sync_allreduce`, copied to `_SYNC` in {STATE}, is read by "
        f"tensor_model_parallel_all_reduce(), which {MEASURED}"
    )
    assert found.weight == 59.6 and found.function == "EngineConfig"  # the mapped reader's own
    assert mapped.score > plain.score and mapped.level == "high" and plain.level == "low"
    # a default nothing on the step reads through any copy stays off the step
    other = dict(base, **{CONFIG: CONFIG_BASE.replace("tp_size: int = 1", "tp_size: int = 2")})
    verdict = evidence(base, ALL_REDUCE_CONFIGURED).judge(CONFIG, "EngineConfig", ["    tp_size: int = 2"])
    assert verdict is not None and verdict.rule == stepmap_scoring.OFF_STEP
    assert score(base, other, evidence(base, ALL_REDUCE_CONFIGURED)).level != "high"


def test_an_environment_default_read_into_a_flag_at_import_counts_as_its_mapped_reader():
    base = base_files(**{STATE: STATE_ENVIRONED, ENVS: ENVS_BASE})
    after = dict(base, **{ENVS: ENVS_BASE.replace('"ENGINE_SYNC", "0"', '"ENGINE_SYNC", "1"')})
    plain = score(base, after, None)
    mapped = score(base, after, evidence(base, ALL_REDUCE_CONFIGURED))
    found = signal(mapped, "map.read-by")
    assert found.description == (
        f"`ENGINE_SYNC`, copied to `_AFTER` in {STATE}, is read by tensor_model_parallel_all_reduce(), "
        f"which {MEASURED}"
    )
    assert found.weight == 59.6 and mapped.level == "high" and plain.level != "high"


def test_a_constant_read_as_an_attribute_of_its_module_counts():
    files = {
        "eng/envs.py": "import os\n\nFAST = os.environ.get('FAST', '1') == '1'\n",
        "eng/run.py": "from eng import envs\n\n\ndef step(x):\n    return x if envs.FAST else x * 2\n",
    }
    entry = {"path": "eng/run.py", "function": "step", "line": 4, "calls_per_step": 2, "host_share": 0.1}
    verdict = evidence(files, entry).judge("eng/envs.py", None, ["FAST = os.environ.get('FAST', '0') == '1'"])
    assert verdict is not None and verdict.rule == stepmap_scoring.READ_BY
    assert verdict.reason.startswith("`FAST` is read by step(), which runs 2 times")
    # another module of that name defining it too: which one is read cannot be told
    files["other/envs.py"] = "FAST = True\n"
    assert (
        evidence(files, entry).judge("eng/envs.py", None, ["FAST = False"]).rule == stepmap_scoring.OFF_STEP
    )  # type: ignore[union-attr]


def test_copies_are_followed_four_deep():
    chain = ["A0 = 1"] + [f"A{i} = A{i - 1}" for i in range(1, 7)]
    files = {"c.py": "\n".join(chain) + "\n\n\ndef f():\n    return A{n}\n"}
    entry = {"path": "c.py", "function": "f", "line": 9, "calls_per_step": 1, "host_share": 0.1}
    assert stepmap_scoring.MAX_COPIES == 4
    for n, reached in ((4, True), (5, False)):
        mapped = {"c.py": files["c.py"].replace("{n}", str(n))}
        verdict = evidence(mapped, entry).judge("c.py", None, ["A0 = 2"])
        assert verdict is not None and verdict.per_step is reached


def test_bindings_record_what_a_module_level_value_and_the_if_around_it_read():
    graph = callgraph.build(
        {
            "m.py": "import os\nif os.environ.get('X'):\n    Y = cfg.size\nelse:\n    Y = 1\nZ: int = Y + 1\nW: int\n"
        }
    )
    found = {(b.name, b.line): (b.reads, b.attributes) for b in graph.bindings}
    assert found[("Y", 3)] == ({"os", "cfg"}, {"environ", "get", "size"})
    assert found[("Y", 5)] == ({"os"}, {"environ", "get"})
    assert found[("Z", 6)] == ({"Y"}, frozenset())
    assert ("m.py", "Y") in graph.constants and ("m.py", "W") in graph.constants
    assert "W" not in {b.name for b in graph.bindings}  # declared, no value read


def test_a_default_two_classes_have_flows_through_a_copy_that_names_its_class():
    config = CONFIG_BASE.replace(
        "    block_size: int = 16\n", "    block_size: int = 16\n    sync_allreduce: bool = False\n"
    )
    base = base_files(**{STATE: STATE_CONFIGURED, CONFIG: config})
    changed = ["    sync_allreduce: bool = True"]
    verdict = evidence(base, ALL_REDUCE_CONFIGURED).judge(CONFIG, "EngineConfig", changed)
    assert verdict is not None and verdict.rule == stepmap_scoring.READ_BY
    unnamed = dict(
        base, **{STATE: STATE_CONFIGURED.replace("EngineConfig().sync_allreduce", "settings.sync_allreduce")}
    )
    verdict = evidence(unnamed, ALL_REDUCE_CONFIGURED).judge(CONFIG, "EngineConfig", changed)
    assert verdict is not None and verdict.rule == stepmap_scoring.OFF_STEP
