"""Environment differences: what counts, what is only a reading, and what matters first."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.judge import envdiff
from tests.core.judge.results_data import FINGERPRINT


def changed(**paths) -> dict:
    """FINGERPRINT with dotted paths set (list indices as numbers)."""
    fingerprint = copy.deepcopy(FINGERPRINT)
    for dotted, value in paths.items():
        *parents, last = dotted.split("__")
        node = fingerprint
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        node[last] = value
    return fingerprint


def test_nested_objects_and_lists_flatten_to_dotted_keys():
    flat = envdiff.flatten({"gpus": [{"name": "H200"}], "torch": {"nccl": "2.28"}, "empty": {}})
    assert flat == {"gpus.0.name": "H200", "torch.nccl": "2.28", "empty": {}}


def test_the_same_fingerprint_has_no_difference():
    assert envdiff.diff(FINGERPRINT, copy.deepcopy(FINGERPRINT)) == []


def test_differences_are_ranked_clocks_power_nccl_driver_torch_then_the_rest():
    head = changed(
        gpus__0__clocks_max_sm="1500",
        gpus__0__power_limit="500.00",
        driver="575.1",
        torch__nccl="2.27.1",
        torch__version="2.12.0",
        env__NCCL_ALGO="Tree",
        host__name="other-runner",
        cpu__governor="powersave",
    )
    head["gpus"][0]["clocks.max.sm"] = head["gpus"][0].pop("clocks_max_sm")
    head["gpus"][0]["power.limit"] = head["gpus"][0].pop("power_limit")
    categories = [d.category for d in envdiff.diff(FINGERPRINT, head)]
    assert categories == [
        "clocks",
        "power",
        "nccl",
        "nccl",
        "driver and CUDA",
        "torch and kernel libraries",
        "CPU and OS",
        "CPU and OS",
    ]
    assert all(d.material for d in envdiff.diff(FINGERPRINT, head))


def test_the_code_under_test_is_not_an_environment_difference():
    base = {
        "sha": "a",
        "reflog": ["a x", "b y"],
        "taken_at": "t1",
        "dirty": False,
        "packages": {"sglang": "0.5.1.dev1+gabc"},
        "checkout_head": "a",
    }
    head = {
        "sha": "b",
        "reflog": ["c z"],
        "taken_at": "t2",
        "dirty": True,
        "packages": {"sglang": "0.5.1.dev2+gdef"},
        "checkout_head": "b",
    }
    assert envdiff.diff(base, head) == []


def test_live_readings_within_the_tolerance_are_not_listed_and_beyond_it_never_count():
    small = changed()
    small["gpus"][0]["clocks.sm"] = "1965"
    small["gpus"][0]["power.draw"] = "125.0"
    assert envdiff.diff(FINGERPRINT, small) == []
    idle = changed()
    idle["gpus"][0]["clocks.sm"] = "345"
    idle["gpus"][0]["temperature.gpu"] = "70"
    found = envdiff.diff(FINGERPRINT, idle)
    assert [d.key for d in found] == ["gpus.0.clocks.sm", "gpus.0.temperature.gpu"]
    assert not envdiff.differs(found)


def test_numbers_written_differently_are_the_same():
    head = changed()
    head["gpus"][0]["power.limit"] = "700"
    assert envdiff.diff(FINGERPRINT, head) == []


def test_a_key_on_one_side_only_shows_as_absent():
    found = envdiff.diff(FINGERPRINT, changed(env__NCCL_P2P_DISABLE="1"))
    assert [(d.key, d.base, d.head) for d in found] == [("env.NCCL_P2P_DISABLE", None, "1")]


def test_ignored_keys_are_listed_but_do_not_count():
    found = envdiff.diff(FINGERPRINT, changed(torch__version="2.12.0"), ignore=["torch.*"])
    assert [d.key for d in found] == ["torch.version"] and not envdiff.differs(found)


def test_a_change_during_the_run_is_drift():
    fingerprint = changed()
    fingerprint["after"] = {"gpus": [{"power.limit": "450.00", "clocks.sm": "1975"}]}
    found = envdiff.drift(fingerprint)
    assert [(d.key, d.base, d.head, d.material) for d in found] == [
        ("gpus.0.power.limit", "700.00", "450.00", True)
    ]
    assert envdiff.diff(fingerprint, FINGERPRINT) == []


def test_long_values_are_clipped_for_display():
    found = envdiff.diff({"topology": "x"}, {"topology": "GPU0 " * 1000})
    assert len(found[0].head) <= envdiff.MAX_VALUE_CHARS + 1


JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.text(max_size=12), JSON, max_size=6),
    st.dictionaries(st.text(max_size=12), JSON, max_size=6),
)
def test_any_fingerprints_compare_without_error_and_each_equals_itself(base, head):
    found = envdiff.diff(base, head)
    assert all(d.base != d.head for d in found)
    assert envdiff.diff(base, copy.deepcopy(base)) == []
    envdiff.drift(base)
