"""The words of what more than one EAGLE-3 kind measures under one name: the cycle."""

from __future__ import annotations

from .base import MetricRole

CYCLE = MetricRole("the EAGLE-3 cycle", "time", "one draft+verify cycle; 1000 * accept_length / spec_tok_s",
                   part="cycle")
