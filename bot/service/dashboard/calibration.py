"""The calibration of the risk alerts over the merges a viewer may see: for all of them and for
each repository."""

from __future__ import annotations

from bot.core.risk.calibration import Calibration, Outcome, calibrate, regressed

from ..ports.store import Store


def calibration(store: Store, visible: frozenset[str] | None) -> tuple[Calibration, dict[str, Calibration]]:
    """(all repositories, each repository by name)."""
    outcomes = []
    for row in store.dashboard.outcomes(visible):
        did = regressed(row.verdict, row.state)
        if did is not None:
            outcomes.append(Outcome(row.repo, row.level, row.rules, did))
    repos = sorted({o.repo for o in outcomes})
    return calibrate(outcomes), {repo: calibrate(o for o in outcomes if o.repo == repo) for repo in repos}
