"""Who may see which repositories on the dashboard, and who may triage.

Anonymous viewers see the repositories known to be public (`PERFBOT_DASHBOARD_ANONYMOUS=public`,
the default), every repository (`all`) or none (`none`). A signed-in user also sees the private
repositories they can read, checked through the API when they sign in and again every few
minutes (`sessions.RECHECK`). Triage needs write permission on the repository, checked through
the API at each action.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..failures import Gone
from ..ports.github import GitHub
from ..services import Services

WRITE_PERMISSIONS = ("admin", "maintain", "write")
log = logging.getLogger("perfbot.dashboard")


@dataclass(frozen=True)
class Viewer:
    """Who is looking: anonymous (no login), or a signed-in GitHub user and the private
    repositories last found readable for them."""

    login: str | None = None
    private_repos: frozenset[str] = frozenset()


def visible(services: Services, viewer: Viewer, anonymous: str) -> frozenset[str] | None:
    """The repositories ``viewer`` may see; None: every one."""
    if anonymous == "all":
        return None
    privacy = services.store.dashboard.repository_privacy()
    public = {repo for repo, private in privacy.items() if not private}
    if viewer.login is None:
        return frozenset() if anonymous == "none" else frozenset(public)
    return frozenset(public | (viewer.private_repos & privacy.keys()))


def readable_private_repos(services: Services, login: str) -> frozenset[str]:
    """The private repositories known to the dashboard that ``login`` can read."""
    privacy = services.store.dashboard.repository_privacy()
    return frozenset(
        repo for repo, private in privacy.items() if private and permission(services, repo, login) != "none"
    )


def may_triage(services: Services, repo: str, login: str) -> bool:
    return permission(services, repo, login) in WRITE_PERMISSIONS


def permission(services: Services, repo: str, login: str) -> str:
    """The user's permission on ``repo``, asked as the App's installation on it (or the token);
    'none' when GitHub cannot be asked (the App is not installed there, GitHub is down)."""
    try:
        return _client(services, repo).permission(repo, login)
    except Gone:  # the repository, or the App's installation on it
        return "none"
    except Exception as error:  # an unreachable GitHub denies access; it must not crash the page
        log.warning("permission check failed", extra={"repo": repo, "user": login}, exc_info=error)
        return "none"


def _client(services: Services, repo: str) -> GitHub:
    installations = {r.full_name: r.installation_id for r in services.store.installations.repositories()}
    return services.github.for_installation(installations.get(repo))
