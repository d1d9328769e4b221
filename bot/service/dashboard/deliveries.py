"""The deliveries perfbot gave up on, as a signed-in maintainer may see them: those of the
repositories they can write to (asked through the API, as triage is)."""

from __future__ import annotations

from dataclasses import dataclass

from ..ports.store import FailedDelivery
from ..services import Services
from . import access

SCANNED = 200  # the newest failures looked at for one page


@dataclass(frozen=True)
class FailedDeliveries:
    shown: list[FailedDelivery]
    elsewhere: int  # failures of repositories this user cannot write to, or of none (installations)


def failed_for(services: Services, login: str, limit: int = 50) -> FailedDeliveries:
    found = services.store.deliveries.failures(SCANNED)
    repos = sorted({f.repo for f in found if f.repo})
    writable = {repo for repo in repos if access.may_triage(services, repo, login)}
    mine = [f for f in found if f.repo in writable]
    return FailedDeliveries(shown=mine[:limit], elsewhere=len(found) - len(mine))
