"""Results files for tests: built from per-round values, in the shape `perfbot bench run` writes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

BASE_SHA = "bba2fc4" + "0" * 33
HEAD_SHA = "3207427" + "0" * 33

# The motivating regression, rounded like real rounds: verify 19 -> 29 ms per cycle at the same
# accept length, EAGLE-3 94 -> ~60 tok/s, below the 82-89 tok/s non-speculative baseline.
EAGLE3 = {
    "verify_ms": (
        "ms",
        "lower",
        [17.1, 16.9, 17.0, 17.2, 16.8, 17.0, 17.1, 16.9, 17.0, 17.3],
        [27.0, 26.8, 27.1, 26.9, 27.3, 27.0, 26.7, 27.2, 27.0, 26.9],
    ),
    "cycle_ms": (
        "ms",
        "lower",
        [19.1, 18.9, 19.0, 19.2, 18.8, 19.0, 19.1, 18.9, 19.0, 19.3],
        [29.0, 28.8, 29.1, 28.9, 29.3, 29.0, 28.7, 29.2, 29.0, 28.9],
    ),
    "accept_length": (
        "tokens",
        "higher",
        [1.79, 1.78, 1.79, 1.80, 1.78, 1.79, 1.78, 1.79, 1.80, 1.79],
        [1.79, 1.79, 1.78, 1.80, 1.79, 1.78, 1.79, 1.79, 1.80, 1.78],
    ),
    "spec_tok_s": (
        "tok/s",
        "higher",
        [94.1, 94.3, 93.8, 94.0, 94.6, 93.9, 94.2, 94.0, 93.7, 94.4],
        [60.2, 59.8, 60.5, 59.9, 60.1, 60.3, 59.6, 60.0, 60.4, 59.7],
    ),
    "baseline_tok_s": (
        "tok/s",
        "higher",
        [89.0, 88.7, 89.2, 88.9, 89.1, 88.8, 89.3, 89.0, 88.6, 89.1],
        [82.5, 82.9, 82.4, 82.7, 82.6, 83.0, 82.3, 82.8, 82.6, 82.5],
    ),
    "draft_ms": (
        "ms",
        "lower",
        [2.00, 2.01, 1.99, 2.00, 2.02, 1.98, 2.00, 2.01, 1.99, 2.00],
        [2.00, 1.99, 2.01, 2.00, 2.00, 2.02, 1.98, 2.00, 2.01, 1.99],
    ),
}

FINGERPRINT = {
    "host": {"name": "gpu-runner-7", "kernel": "6.8.0"},
    "gpus": [
        {
            "name": "NVIDIA H200",
            "clocks.max.sm": "1980",
            "clocks.sm": "1980",
            "power.limit": "700.00",
            "power.draw": "120.5",
        }
    ],
    "driver": "570.86.15",
    "torch": {"version": "2.11.0+cu130", "nccl": "2.28.3"},
    "env": {"NCCL_NVLS_ENABLE": "0"},
    "cpu": {"model": "Intel Xeon Platinum 8480+", "governor": "performance"},
}

Metrics = Mapping[str, tuple[str, str, Sequence[float], Sequence[float]]]


def document(
    metrics: Metrics,
    *,
    base_fingerprint: Mapping[str, Any] | None = None,
    head_fingerprint: Mapping[str, Any] | None = None,
    failed: Mapping[str, int] | None = None,
    suite: str = "sglang-eagle3",
    error: str = "CUDA error: out of memory",
) -> dict[str, Any]:
    """A results document as `perfbot bench run` writes it: round pairs in ABBA order (base first,
    then head first, ...), each round numbered within its side by its pair (the runner's
    ``index``), the file listing them in the order they ran; ``failed[side]`` extra failed rounds
    after them."""
    failed = failed or {}
    rounds = []
    count = max(len(values) for _, _, b, h in metrics.values() for values in (b, h))
    for i in range(count):
        for side in ("base", "head") if i % 2 == 0 else ("head", "base"):
            position = 2 if side == "base" else 3
            values = {n: m[position][i] for n, m in metrics.items() if i < len(m[position])}
            if not values:
                continue
            rounds.append({"side": side, "index": i, "ok": True, "error": None, "metrics": values})
    for side in ("base", "head"):
        for k in range(failed.get(side, 0)):
            rounds.append({"side": side, "index": count + k, "ok": False, "error": error, "metrics": {}})
    return {
        "schema": "perfbot.results/1",
        "suite": suite,
        "repo": "sgl-project/sglang",
        "base": {"sha": BASE_SHA, "fingerprint": dict(base_fingerprint or FINGERPRINT)},
        "head": {"sha": HEAD_SHA, "fingerprint": dict(head_fingerprint or FINGERPRINT)},
        "metrics": {n: {"unit": m[0], "better": m[1]} for n, m in metrics.items()},
        "rounds": rounds,
        "started_at": "2026-11-30T00:00:00+00:00",
        "finished_at": "2026-11-30T00:20:00+00:00",
    }


def text(metrics: Metrics, **options: Any) -> str:
    return json.dumps(document(metrics, **options))
