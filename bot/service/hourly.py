"""The hourly sweep of every watched repository: first the watch's second chance for its cases
(a new day's budget, budget freed since, a dispatch cut short), then the scheduled run when its
slot is due. Each repository, and each of the two, on its own: one's trouble stops neither the
other nor the next repository."""

from __future__ import annotations

import logging

from . import benchmarks, repo_config, watch
from .services import Services

log = logging.getLogger("perfbot.hourly")


def sweep(services: Services) -> int:
    """One pass over the watched repositories; how many scheduled runs were started."""
    started = 0
    for repository in services.store.installations.repositories():
        repo = repository.full_name
        try:
            github = services.github.for_installation(repository.installation_id)
            branch, head = github.default_branch(repo)
            config, _ = repo_config.read(github, repo, branch, services.store.config_problems)
        except Exception:  # one repository's trouble must not stop the others'
            log.exception("hourly sweep could not read the repository", extra={"repo": repo})
            continue
        try:
            watch.sweep(services, github, repo, config, branch)
        except Exception:  # nor the scheduled run's
            log.exception("regression cases' sweep failed", extra={"repo": repo})
        try:
            started += benchmarks.scheduled_run(
                services, github, repo, repository.installation_id, config, branch, head
            )
        except Exception:
            log.exception("scheduled benchmark failed", extra={"repo": repo})
    return started
