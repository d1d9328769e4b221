"""Kernel profiles and Kineto traces for tests: built from kernels per step, in the shapes PyTorch's
profiler writes (a launch on the host, its kernel on the device, linked by ``correlation``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.core.judge.profile import Profile, aggregate, classify

PADDED = [
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 32, 9.0),
    ("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", 96, 40.0),
    (
        "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<>::Params)",
        16,
        12.0,
    ),
    (
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float> > >"
        "(at::native::ReduceOp<float, at::native::MeanOps<float, float> >)",
        32,
        3.0,
    ),
    (
        "void at::native::elementwise_kernel<128, 2, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
        "::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1}>(int, "
        "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
        "{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1})",
        32,
        2.0,
    ),
]
# The slow commit: a fill of the padded buffer per allreduce, one more copy each.
FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul>)",
    32,
    35.0,
)


def slow(kernels: Sequence[tuple[str, int, float]]) -> list[tuple[str, int, float]]:
    copy = kernels[4]
    return [*kernels[:4], (copy[0], 64, copy[2]), FILL]


def profile(
    kernels: Sequence[tuple[str, int, float]],
    steps: int = 5,
    step_us: float = 9000.0,
    idle_us: float = 120.0,
    syncs: int = 0,
) -> Profile:
    events = [(name, classify(name), us) for name, calls, us in kernels for _ in range(calls * steps)]
    events += [("cudaDeviceSynchronize", "sync", 6.0)] * (syncs * steps)
    return Profile(
        source="test",
        device="cuda",
        what="one EAGLE-3 cycle, piecewise CUDA graphs",
        steps=steps,
        step_us=step_us,
        idle_us=idle_us,
        kernels=aggregate(events, steps),
    )


def trace(
    steps: Sequence[Sequence[tuple[str, float]]],
    gap: float = 2.0,
    syncs_per_step: int = 0,
    category: str = "kernel",
) -> dict[str, Any]:
    """A Chrome trace of ``steps``, each a list of (kernel name, duration): one ``ProfilerStep#N`` per
    step on the host, each kernel launched inside it and run on the device ``gap`` µs after the last."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}
    ]
    host, device, correlation = 1000.0, 1000.0, 0
    for number, kernels in enumerate(steps, start=1):
        began = host
        for name, duration in kernels:
            correlation += 1
            events.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 1,
                    "tid": 1,
                    "ts": host,
                    "dur": 1.0,
                    "args": {"correlation": correlation},
                }
            )
            device = max(device, host + 1.0) + gap
            events.append(
                {
                    "ph": "X",
                    "cat": category,
                    "name": name,
                    "pid": 0,
                    "tid": 7,
                    "ts": device,
                    "dur": duration,
                    "args": {"correlation": correlation, "device": 0},
                }
            )
            device += duration
            host += 1.5
        for _ in range(syncs_per_step):
            events.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaDeviceSynchronize",
                    "pid": 1,
                    "tid": 1,
                    "ts": host,
                    "dur": max(device - host, 0.0) + 1.0,
                    "args": {"correlation": 0},
                }
            )
            host = max(host, device) + 2.0
        host = max(host, device) + 5.0
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{number}",
                "pid": 1,
                "tid": 1,
                "ts": began - 0.5,
                "dur": host - began,
            }
        )
        host += 10.0
    return {"schemaVersion": 1, "traceEvents": events}
