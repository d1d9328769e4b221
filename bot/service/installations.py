"""Keep the store's list of watched repositories in step with the App's installations."""

from __future__ import annotations

from .ports import Repository
from .router import Router
from .services import Services

router = Router()


def _repos(items: list[dict] | None, installation_id: int) -> list[Repository]:
    return [Repository(r["id"], r["full_name"], installation_id, r.get("private")) for r in items or ()]


@router.register("installation", "created")
@router.register("installation", "unsuspend")
@router.register("installation", "new_permissions_accepted")
def on_installed(payload: dict, services: Services) -> None:
    installation = payload["installation"]["id"]
    if payload.get("repositories") is not None:
        services.store.replace_installation(installation, _repos(payload["repositories"], installation))


@router.register("installation", "deleted")
@router.register("installation", "suspend")
def on_uninstalled(payload: dict, services: Services) -> None:
    services.store.remove_installation(payload["installation"]["id"])


@router.register("installation_repositories", "added")
@router.register("installation_repositories", "removed")
def on_repositories_changed(payload: dict, services: Services) -> None:
    installation = payload["installation"]["id"]
    services.store.add_repositories(installation, _repos(payload.get("repositories_added"), installation))
    removed = [r["id"] for r in payload.get("repositories_removed") or ()]
    if removed:
        services.store.remove_repositories(installation, removed)
