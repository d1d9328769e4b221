"""When to stop adding rounds: the one place the adaptive-rounds rule lives.

`should_continue` is asked after every ABBA pair. Below the minimum it always says go on; at the
maximum it says stop. In between it asks the statistics core (`bot.core.judge.stats.judge`, the same
judgement `perfbot compare` makes) about each metric that decides the verdict (the primary ones;
every metric when none is), at a significance level divided over the looks the run may take
(`results.looks`, `stats.alpha_per_look`), so that peeking after every pair does not raise the
false-alarm rate. It goes on while such a metric is *inconclusive* and the core estimates that the
rounds still allowed could decide it; a diagnostic, or a metric that would need more rounds than
the cap allows (an eager timing drowned in host noise, say), does not keep the GPUs busy in vain.

A *regression* stops the run only once it is strong enough to stand for a stream of runs
(`vocabulary.WATCH_ALPHA` over the looks, the level at which the watch opens a case of a merge from
its run alone): below it, the run goes on while the core estimates that the rounds still allowed
would reach it. The verdict's own level is unchanged (each look is tested at its share of
``alpha``, whatever the rule for stopping), so a merge run that stopped at its first significant
look, weaker than one quiet merge in a hundred thousand, would have told the watch nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from bot.core import vocabulary
from bot.core.judge import model, results, stats


class MetricSamples(NamedTuple):
    base: Sequence[float]
    head: Sequence[float]
    better: stats.Better
    primary: bool = True
    base_se: Sequence[float] | None = None  # each round's standard error, where recorded
    head_se: Sequence[float] | None = None


def should_continue(
    samples: Mapping[str, MetricSamples],
    rounds_done: int,
    min_rounds: int,
    max_rounds: int,
    *,
    watch_level: bool = True,
) -> bool:
    """Whether to run another pair of rounds; ``rounds_done`` counts rounds per side, failed ones
    included, so a failing suite cannot run forever. ``watch_level``: a regression goes on to the
    watch's level (a bisection's probes stop at the run's)."""
    if rounds_done < min_rounds:
        return True
    if rounds_done >= max_rounds:
        return False
    looks = results.looks(min_rounds, max_rounds)
    alpha = stats.alpha_per_look(stats.DEFAULT_ALPHA, looks)
    deciding = {n: m for n, m in samples.items() if m.primary} or dict(samples)
    strong = vocabulary.WATCH_ALPHA / looks if watch_level else 1.0
    family = len(deciding)
    return any(
        worth_more_rounds(name, metric, alpha, max_rounds - rounds_done, strong=strong / family)
        for name, metric in deciding.items()
    )


def worth_more_rounds(
    name: str, metric: MetricSamples, alpha: float, rounds_left: int, *, strong: float = 0.0
) -> bool:
    """Whether more rounds (at most ``rounds_left`` a side) would likely settle an inconclusive
    metric, or bring a regression weaker than ``strong`` (its p-value) down to it."""
    judgement = stats.judge(
        metric.base,
        metric.head,
        metric.better,
        alpha=alpha,
        name=name,
        base_se=metric.base_se,
        head_se=metric.head_se,
    )
    if judgement.verdict == "regression":
        fit = judgement.estimate.fit
        if fit is None or judgement.p_value <= strong:
            return False
        have = judgement.estimate.rounds
        cap = have + rounds_left
        # rounds_to_decide answers cap + 1 when even cap rounds would not reach it
        needed = model.rounds_to_decide(
            fit, stats.DEFAULT_MIN_EFFECT, strong, stats.DEFAULT_CONFIDENCE, have, cap + 1
        )
        return needed <= cap
    if judgement.verdict != "inconclusive" or judgement.extra_rounds is None:
        return False
    return judgement.extra_rounds <= rounds_left
