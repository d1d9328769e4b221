"""Many metrics tested at once: Holm's step-down adjustment within a family of metrics, metrics
whose rounds move in lockstep (``tok_s`` is a fixed multiple of ``1 / cycle_ms``) counted as one
hypothesis and left out the same rounds, and the level of each of an adaptive run's looks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from bot.core.judge.estimate import Estimate, outliers

_LOCKSTEP = 1e-9  # log-scale tolerance for two metrics that are fixed transforms of each other


def alpha_per_look(alpha: float, looks: int) -> float:
    """Significance level for each of ``looks`` planned interim judgements (Bonferroni)."""
    return alpha / max(1, looks)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values: reject where adjusted <= alpha, family-wise error <= alpha."""
    count = len(p_values)
    adjusted = [1.0] * count
    running = 0.0
    for rank, index in enumerate(sorted(range(count), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (count - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def shared_exclusions(
    values: Mapping[str, tuple[Sequence[float], Sequence[float]]],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each metric's far outliers (`outliers`), the same for metrics whose rounds move in lockstep
    (one a fixed multiple of another or of its inverse): a round left out of the cycle is left
    out of the tok/s derived from it, so that the two never tell different stories. A group's
    exclusions are those of every member together."""
    shared: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for group in _groups(values, lambda a, b: _lockstep(values[a], values[b])):
        masks = [outliers(*values[name]) for name in group]
        union = (np.logical_or.reduce([m[0] for m in masks]), np.logical_or.reduce([m[1] for m in masks]))
        shared.update(dict.fromkeys(group, union))
    return shared


def family_adjusted(
    names: Sequence[str],
    found: Mapping[str, Estimate],
    values: Mapping[str, tuple[Sequence[float], Sequence[float]]],
) -> tuple[dict[str, float], int]:
    """Holm-adjusted p-values of one family of metrics, and the number of distinct hypotheses in
    it: metrics whose round values move in lockstep (one is a fixed multiple of the other or of
    its inverse, round by round) and test alike are one hypothesis."""
    groups = _groups(
        names,
        lambda a, b: (
            _lockstep(values[a], values[b]) and math.isclose(found[a].p_value, found[b].p_value, rel_tol=1e-9)
        ),
    )
    adjusted = holm([found[g[0]].p_value for g in groups])
    return {name: p for g, p in zip(groups, adjusted, strict=True) for name in g}, len(groups)


def _groups(names: Iterable[str], same: Callable[[str, str], bool]) -> list[list[str]]:
    """``names`` in groups, in order: each joins the first group whose first member it is ``same``
    as (metrics whose rounds move in lockstep), else starts one."""
    groups: list[list[str]] = []
    for name in names:
        group = next((g for g in groups if same(g[0], name)), None)
        if group is None:
            groups.append([name])
        else:
            group.append(name)
    return groups


def _lockstep(a: tuple[Sequence[float], Sequence[float]], b: tuple[Sequence[float], Sequence[float]]) -> bool:
    """Whether two metrics' rounds are fixed transforms of each other: ``log a ± log b`` the same
    in every round of both sides."""
    first, second = (np.concatenate([np.asarray(s, dtype=float) for s in pair]) for pair in (a, b))
    if first.size != second.size or first.size < 2 or first.min() <= 0 or second.min() <= 0:
        return False
    with np.errstate(all="ignore"):
        x, y = np.log(first), np.log(second)
    return any(bool(np.ptp(combined) <= _LOCKSTEP) for combined in (x - y, x + y))
