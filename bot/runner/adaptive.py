"""When to stop adding rounds: the one place the adaptive-rounds rule lives.

`should_continue` is called after every ABBA pair once the minimum number of rounds is reached.
Until the statistics core (``bot.core.stats``) offers its judge, it applies an interim rule per
metric, on the successful rounds of each side:

- **decided** when the two sides' ranges ``[min, max]`` do not overlap (a clear change), or when
  the medians differ by less than ``tolerance`` (1% by default) of the base median (no change
  worth more rounds);
- otherwise **inconclusive**.

It keeps going while any metric is inconclusive, and never past ``max_rounds`` per side. Replacing
the rule with the statistics core's verdict means changing only `is_inconclusive`.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

DEFAULT_TOLERANCE = 0.01


def should_continue(samples: Mapping[str, tuple[Sequence[float], Sequence[float]]], rounds_done: int,
                    min_rounds: int, max_rounds: int, tolerance: float = DEFAULT_TOLERANCE) -> bool:
    """Whether to run another pair of rounds.

    ``samples`` maps each metric to its (base values, head values) so far; ``rounds_done`` counts
    rounds per side, failed ones included, so a failing suite cannot run forever.
    """
    if rounds_done < min_rounds:
        return True
    if rounds_done >= max_rounds:
        return False
    return any(is_inconclusive(base, head, tolerance) for base, head in samples.values())


def is_inconclusive(base: Sequence[float], head: Sequence[float], tolerance: float) -> bool:
    if len(base) < 2 or len(head) < 2:
        return True
    if max(base) < min(head) or max(head) < min(base):
        return False
    base_median = statistics.median(base)
    scale = abs(base_median) or 1.0
    return abs(statistics.median(head) - base_median) / scale >= tolerance
