"""Kernel profiles: families by name, per-step aggregation, and the diff that says what changed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.judge import profile as kernels
from tests.core.judge.profile_data import FILL, PADDED, profile, slow


@pytest.mark.parametrize(
    "name,category,family",
    [
        (
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "kernel",
            "communication",
        ),
        ("cross_device_reduce_1stage<__nv_bfloat16, 2>", "kernel", "communication"),
        ("c10d::allreduce_", "cpu_op", "communication"),
        ("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", "kernel", "gemm"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64", "kernel", "gemm"),
        ("aten::matmul", "cpu_op", "gemm"),
        (
            "flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, cutlass::bfloat16_t>>",
            "kernel",
            "attention",
        ),
        ("BatchPrefillWithPagedKVCacheKernel", "kernel", "attention"),
        (FILL[0], "kernel", "memset"),
        ("Memset (Device)", "gpu_memset", "memset"),
        ("aten::zeros", "cpu_op", "memset"),
        ("Memcpy DtoD (Device -> Device)", "gpu_memcpy", "elementwise"),
        (PADDED[4][0], "kernel", "elementwise"),
        (PADDED[3][0], "kernel", "reduction"),
        ("aten::softmax", "cpu_op", "reduction"),
        ("aten::slice", "cpu_op", "other"),
    ],
)
def test_each_kernel_lands_in_its_family(name, category, family):
    assert kernels.classify(name, category) == family


def test_rows_are_per_step_and_the_longest_come_first():
    rows = kernels.aggregate([("a", "gemm", 10.0)] * 6 + [("b", "memset", 1.0)] * 3, steps=3)
    assert [(r.name, r.calls, r.us) for r in rows] == [("a", 2.0, 20.0), ("b", 1.0, 1.0)]


def test_names_beyond_the_cap_are_folded_into_one_row_per_family():
    events = [(f"k{i}", "other", float(i)) for i in range(kernels.MAX_KERNELS + 7)]
    rows = kernels.aggregate(events, steps=1)
    assert len(rows) == kernels.MAX_KERNELS + 1
    assert rows[-1].name == "(other other kernels)" and rows[-1].calls == 7


def test_the_slow_commit_s_fill_appears_its_copy_doubles_and_memset_time_moves():
    d = kernels.diff(profile(PADDED), profile(slow(PADDED), idle_us=900.0, syncs=32))
    by_name = {k.name: k for k in d.kernels}
    assert by_name[FILL[0]].change == "appeared" and by_name[FILL[0]].head_calls == 32
    assert by_name[PADDED[4][0]].change == "calls"
    assert (by_name[PADDED[4][0]].base_calls, by_name[PADDED[4][0]].head_calls) == (32, 64)
    assert (
        by_name["cudaDeviceSynchronize"].change == "appeared"
        and by_name["cudaDeviceSynchronize"].family == "sync"
    )
    moved = {f.family for f in d.families if f.moved}
    assert moved == {"memset", "sync"}  # the extra copies: 64 µs of a 9 ms step, under the margin
    assert d.idle is not None and d.idle.moved
    summary = kernels.summary(d)
    assert summary.startswith("2 appeared; 1 changed calls per step; memset / fill +1.12 ms per step")
    assert summary.endswith("host gaps +780 µs per step")


def test_two_passes_of_the_same_code_report_no_change_within_the_margin():
    base = profile(PADDED)
    noisy = [(name, calls, us * 1.04) for name, calls, us in PADDED]  # 4% slower under the profiler
    d = kernels.diff(base, profile(noisy, step_us=9300.0, idle_us=130.0))
    assert not d.changed and d.kernels == ()
    assert kernels.summary(d).startswith("no kernel appeared or vanished")


def test_a_kernel_that_vanished_is_named():
    d = kernels.diff(profile(slow(PADDED)), profile(PADDED))
    assert [(k.name, k.change) for k in d.kernels if k.change == "vanished"] == [(FILL[0], "vanished")]


def test_different_steps_on_the_two_sides_are_noted():
    other = profile(PADDED).model_copy(update={"what": "one EAGLE-3 cycle, eager"})
    assert "profiled different things" in kernels.diff(profile(PADDED), other).notes[0]


def test_no_diff_unless_both_sides_were_profiled():
    assert kernels.diff_of(profile(PADDED), None) is None
    assert kernels.diff_of(None, profile(PADDED)) is None


def test_long_kernel_names_are_shortened_for_tables():
    assert kernels.short_name(FILL[0]).startswith(
        "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor"
    )
    assert len(kernels.short_name(PADDED[4][0])) <= 90
    assert (
        kernels.short_name("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(args)")
        == "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
    )


KERNEL = st.tuples(
    st.sampled_from([k[0] for k in PADDED] + [FILL[0], "x"]), st.integers(1, 40), st.floats(0.1, 100.0)
)


@settings(max_examples=100, deadline=None)
@given(
    base=st.lists(KERNEL, max_size=6, unique_by=lambda k: k[0]),
    head=st.lists(KERNEL, max_size=6, unique_by=lambda k: k[0]),
)
def test_a_diff_is_the_mirror_of_the_reverse_diff(base, head):
    forward, backward = kernels.diff(profile(base), profile(head)), kernels.diff(profile(head), profile(base))
    mirror = {"appeared": "vanished", "vanished": "appeared", "calls": "calls"}
    assert sorted((k.name, mirror[k.change]) for k in forward.kernels) == sorted(
        (k.name, k.change) for k in backward.kernels
    )
    assert kernels.diff(profile(base), profile(base)).kernels == ()
