"""The words of what more than one EAGLE-3 kind measures under one name: the cycle, the decoding
rate without speculation and the speed-up of speculation over it. This module registers no kind of
its own."""

from __future__ import annotations

from .base import MetricRole

CYCLE = MetricRole(
    "the EAGLE-3 cycle", "time", "one draft+verify cycle; 1000 * accept_length / spec_tok_s", part="cycle"
)
PLAIN_RATE = MetricRole(
    "non-speculative decoding",
    "rate",
    "tokens per second per request with speculation off",
    part="plain_rate",
)
SPEEDUP = MetricRole(
    "the speculative speedup",
    "ratio",
    "tokens per second with speculation / without; below 1 speculation costs speed",
    part="speedup",
)
