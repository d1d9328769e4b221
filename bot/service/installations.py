"""The installation pipelines: keep the store's list of watched repositories in step with the
App's installations."""

from __future__ import annotations

from .events import InstallationEvent, InstallationRepositoriesEvent
from .services import Services

_INSTALLED = ("created", "unsuspend", "new_permissions_accepted")


def wants(event: InstallationEvent | InstallationRepositoriesEvent) -> bool:
    return True


def on_installation(event: InstallationEvent, services: Services) -> None:
    if event.action in _INSTALLED:
        if event.repositories is not None:
            services.store.installations.replace(event.installation_id, list(event.repositories))
    else:
        services.store.installations.remove(event.installation_id)


def on_repositories(event: InstallationRepositoriesEvent, services: Services) -> None:
    services.store.installations.add(event.installation_id, list(event.added))
    if event.removed:
        services.store.installations.remove_repositories(event.installation_id, list(event.removed))
