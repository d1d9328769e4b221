"""When to stop adding rounds: the one place the adaptive-rounds rule lives.

`should_continue` is asked after every ABBA pair. Below the minimum it always says go on; at the
maximum it says stop. In between it asks the statistics core (`bot.core.judge.stats.judge`, the same
judgement `perfbot compare` makes) about each metric, at a significance level divided over the
looks the run may take (`results.looks`, `stats.alpha_per_look`), so that peeking after every pair
does not raise the false-alarm rate. It goes on while some metric is *inconclusive* and the core
estimates that the rounds still allowed could decide it; a metric that would need more rounds than
the cap allows (an eager timing drowned in host noise, say) does not keep the GPUs busy in vain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from bot.core.judge import results, stats

# Enough resamples for a stop/go decision after every pair; the final verdict uses compare's own.
_RESAMPLES = 500


class MetricSamples(NamedTuple):
    base: Sequence[float]
    head: Sequence[float]
    better: stats.Better


def should_continue(samples: Mapping[str, MetricSamples], rounds_done: int, min_rounds: int,
                    max_rounds: int) -> bool:
    """Whether to run another pair of rounds; ``rounds_done`` counts rounds per side, failed ones
    included, so a failing suite cannot run forever."""
    if rounds_done < min_rounds:
        return True
    if rounds_done >= max_rounds:
        return False
    alpha = stats.alpha_per_look(stats.DEFAULT_ALPHA, results.looks(min_rounds, max_rounds))
    return any(worth_more_rounds(name, metric, alpha, max_rounds - rounds_done)
               for name, metric in samples.items())


def worth_more_rounds(name: str, metric: MetricSamples, alpha: float, rounds_left: int) -> bool:
    judgement = stats.judge(metric.base, metric.head, metric.better, alpha=alpha, name=name,
                            n_resamples=_RESAMPLES)
    if judgement.verdict != "inconclusive" or judgement.extra_rounds is None:
        return False
    return judgement.extra_rounds <= rounds_left
