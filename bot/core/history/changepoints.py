"""Change points of one metric series, with the level either side of each.

Detection is ruptures' kernel change point detection with a linear kernel: least squares on the
mean, solved exactly by PELT in C. Its time grows with the square of the length when nothing
changes, so a long series is first reduced to the medians of consecutive blocks (at most
`MAX_BLOCKS` of them, which also damps single wild rounds), and each change found is then placed
exactly within its block by least squares on the raw points. The series is put in units of its
own noise, estimated robustly from consecutive differences (median absolute
deviation), so that one penalty fits a metric in milliseconds and one in tokens per second, and a
single wild round cannot pass for a new level. A shift smaller than ``min_effect`` of the level
is dropped and its neighbours are compared again: a benchmark that moved 0.3% is noise, not news.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import ruptures

from bot.core import vocabulary

DEFAULT_MIN_EFFECT = vocabulary.MIN_EFFECT
DEFAULT_MIN_SIZE = 5
# Penalty per change point, in units of the noise variance times log(n): BIC's is 2; heavier
# tails than Gaussian noise (GPU benchmarks have them) need more to stay quiet.
DEFAULT_PENALTY = 4.0
_MAD_TO_SIGMA = 1.4826
_CLIP_SIGMAS = 6.0
MAX_BLOCKS = 2_000

# A metric series (or what is derived from it), one float per point.
Series = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """The level changed at ``index`` (the first point of the new level)."""

    index: int
    before: float  # median of the segment before
    after: float  # median of the segment from ``index`` on
    change: float  # after / before - 1
    direction: str  # 'regression' or 'improvement', given which way is better

    def to_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "before": self.before,
            "after": self.after,
            "change": self.change,
            "direction": self.direction,
        }


def detect(
    values: Sequence[float],
    better: str = "lower",
    *,
    min_effect: float = DEFAULT_MIN_EFFECT,
    min_size: int = DEFAULT_MIN_SIZE,
    penalty: float = DEFAULT_PENALTY,
) -> list[ChangePoint]:
    """The change points of ``values`` (in time order) that moved the median by ``min_effect``
    or more; ``better`` ('lower' or 'higher') says which direction is an improvement."""
    raw = np.asarray(values, dtype=float)
    kept = np.flatnonzero(np.isfinite(raw))  # a NaN or infinity is no measurement: skip it
    series = raw[kept]
    n = len(series)
    if n < 2 * min_size:
        return []
    block = -(-n // MAX_BLOCKS)
    reduced = _block_medians(series, block)
    scaled = _in_noise_units(reduced)
    if scaled is None:
        return []
    size = max(2, -(-min_size // block)) if block > 1 else min_size
    algo = ruptures.KernelCPD(kernel="linear", min_size=size, jump=1).fit(scaled.reshape(-1, 1))
    coarse = [int(b) * block for b in algo.predict(pen=penalty * np.log(len(reduced)))][:-1]
    bounds = _placed(series, coarse, block) if block > 1 else coarse
    found = _significant(series, bounds, better, min_effect)
    return [ChangePoint(int(kept[p.index]), p.before, p.after, p.change, p.direction) for p in found]


def _block_medians(series: Series, block: int) -> Series:
    if block == 1:
        return series
    whole = len(series) // block * block
    medians: Series = np.median(series[:whole].reshape(-1, block), axis=1)
    if whole < len(series):
        medians = np.append(medians, np.median(series[whole:]))
    return medians


def _placed(series: Series, coarse: list[int], block: int) -> list[int]:
    """Each block boundary moved to the split within a block either side that leaves the least
    squared error between its neighbouring boundaries."""
    sums = np.concatenate(([0.0], np.cumsum(series)))
    squares = np.concatenate(([0.0], np.cumsum(series * series)))

    def sse(a: npt.NDArray[np.intp], b: npt.NDArray[np.intp]) -> Series:
        total = sums[b] - sums[a]
        error: Series = (squares[b] - squares[a]) - total * total / (b - a)
        return error

    edges = [0, *coarse, len(series)]
    placed: list[int] = []
    for i, bound in enumerate(coarse, start=1):
        lo, hi = max(edges[i - 1], placed[-1] if placed else 0), edges[i + 1]
        candidates = np.arange(max(lo + 1, bound - block), min(hi - 1, bound + block) + 1)
        if len(candidates) == 0:
            placed.append(bound)
            continue
        costs = sse(np.full_like(candidates, lo), candidates) + sse(candidates, np.full_like(candidates, hi))
        placed.append(int(candidates[int(np.argmin(costs))]))
    return placed


def noise(series: Series) -> float:
    """The standard deviation of a series' noise, estimated robustly from consecutive differences
    (median absolute deviation), so that its steps and single wild points do not count as noise;
    0 when every point is equal."""
    if len(series) < 2:
        return 0.0
    steps = np.diff(series)
    sigma = _MAD_TO_SIGMA * float(np.median(np.abs(steps - np.median(steps)))) / np.sqrt(2)
    if sigma == 0.0:  # quantised values: most steps are exactly 0
        # Their mean size as a normal's deviation, without the two largest (one wild reading makes
        # two, and squared they would outweigh a real step); with them when they were all there was.
        sizes = np.sort(np.abs(steps))
        kept = sizes[: max(1, len(sizes) - 2)]
        sigma = float(kept.mean() if kept.any() else sizes.mean()) * np.sqrt(np.pi / 2) / np.sqrt(2)
    return float(sigma)


def _in_noise_units(series: Series) -> Series | None:
    """The series centred on its median and divided by its noise, wild points clipped; None
    when it has no noise to speak of (every point equal)."""
    sigma = noise(series)
    if sigma == 0.0:
        return None
    return _clip_spikes((series - np.median(series)) / sigma)


def _clip_spikes(centred: Series) -> Series:
    """Clip each point to within `_CLIP_SIGMAS` of its neighbours' median: a lone spike is
    flattened, a step (every later point moved) is kept."""
    padded = np.pad(centred, 2, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, 5)
    local = np.median(windows, axis=1)
    clipped: Series = np.clip(centred, local - _CLIP_SIGMAS, local + _CLIP_SIGMAS)
    return clipped


def _significant(series: Series, bounds: list[int], better: str, min_effect: float) -> list[ChangePoint]:
    """Drop the smallest shift below ``min_effect`` until none is left, then describe the rest."""
    while True:
        points = _describe(series, bounds, better)
        small = [p for p in points if abs(p.change) < min_effect]
        if not small:
            return points
        weakest = min(small, key=lambda p: abs(p.change))
        bounds = [b for b in bounds if b != weakest.index]


def _describe(series: Series, bounds: list[int], better: str) -> list[ChangePoint]:
    edges = [0, *bounds, len(series)]
    medians = [float(np.median(series[a:b])) for a, b in zip(edges, edges[1:], strict=False)]
    points = []
    for i, index in enumerate(bounds):
        before, after = medians[i], medians[i + 1]
        change = after / before - 1 if before != 0 else (0.0 if after == 0 else float(np.sign(after)))
        points.append(ChangePoint(index, before, after, change, vocabulary.direction(change, better)))
    return points
