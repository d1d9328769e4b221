"""The order rounds run in: warm-ups alternating, then counted rounds in ABBA pairs."""

from __future__ import annotations

from bot.core.judge.results import SIDES, Side


def warmup_order(warmups: int) -> list[Side]:
    """``warmups`` per side, alternating base/head, so neither side is always first."""
    return [side for _ in range(warmups) for side in SIDES]


def pair_order(pair: int) -> tuple[Side, Side]:
    """Pair 0 runs base then head, pair 1 head then base, and so on (ABBA ABBA ...).

    Alternating which side goes first cancels a linear drift (the GPU warming, a clock settling)
    between the two sides instead of charging it to one of them.
    """
    return SIDES if pair % 2 == 0 else (SIDES[1], SIDES[0])
