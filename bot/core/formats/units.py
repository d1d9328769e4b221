"""Time units a tool may report a metric in, and the conversion between them: one metric has one
unit in a results file, whatever unit each round's file gave it (Google Benchmark lets a
benchmark's unit change with a flag or a line of code, so two rounds, or two sides, may differ)."""

from __future__ import annotations

# Seconds per unit. "µs" is how some tools write a microsecond.
SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def factor(unit: str, target: str) -> float | None:
    """What multiplies a value in ``unit`` to give it in ``target``: 1 for one unit, the ratio of
    two time units, None where they are not both time units (no conversion exists)."""
    if unit == target:
        return 1.0
    if unit in SECONDS and target in SECONDS:
        return SECONDS[unit] / SECONDS[target]
    return None
