"""The `pull_request` pipeline: one snapshot per delivery, pure decisions, one application.

A push (opened, synchronize, reopened; a draft made ready; a base changed) reads the pull request
once, the default branch's config once and the diff once; the core plans the review
(`bot.core.review.plan`) and whether to benchmark the head (`bot.core.bench.policy`, which asks for
the author's permission only when the risk could start a run); then older heads' benchmarks are
superseded, the check run and label published, an automatic benchmark started, and the sticky
comment written once from what is now stored. A close cancels the pull request's benchmarks, records
a merge for the dashboard (from the stored review, without asking GitHub again) and benchmarks a
risky merge commit for the default branch's history.
"""

from __future__ import annotations

import logging

from bot.core.bench import contract, policy
from bot.core.config.schema import RepoConfig
from bot.core.pulls import PullInfo
from bot.core.review import plan as review_plan
from bot.core.vocabulary import Level

from . import benchmarks, repo_config, reviewing, sticky
from .events import PullRequestAction, PullRequestEvent
from .ports import GitHub, PullRequestGone
from .records import Merge, Review
from .services import Services

log = logging.getLogger("perfbot.review")

NEW_HEADS: tuple[PullRequestAction, ...] = ("opened", "synchronize", "reopened")  # may bring a new head


def wants(event: PullRequestEvent) -> bool:
    if event.action == "closed":
        return True
    if event.action == "edited" and not event.base_changed:
        return False  # a title or body edit cannot change the risk
    return event.open


def handle(event: PullRequestEvent, services: Services) -> None:
    if event.repo.record is not None:  # learn the repository and its visibility from every event about it
        services.store.installations.add(event.repo.installation_id, [event.repo.record])
    if event.action == "closed":
        _closed(event, services)
    else:
        _pushed(event, services)


# ---------------------------------------------------------------- a push


def _pushed(event: PullRequestEvent, services: Services) -> None:
    store, repo, number = services.store, event.repo.full_name, event.number
    if event.action in NEW_HEADS:
        store.work.record_push(repo, number, event.head_sha, event.updated_at or services.now())
    github = services.github.for_installation(event.repo.installation_id)
    try:
        pull = github.pull(repo, number)
    except PullRequestGone:
        log.info("pull request gone; dropped", extra={"repo": repo, "pr": number})
        return
    if pull.head_sha != event.head_sha:
        log.info("superseded by a newer push; skipped", extra={"repo": repo, "pr": number})
        return
    older = [r for r in benchmarks.active(services, repo, number)
             if r.head_sha != pull.head_sha and event.action in NEW_HEADS]
    reviewed = pull.open and not (pull.draft or event.draft)  # a ready_for_review event follows
    if not reviewed and not older:
        return
    config, config_error = repo_config.read(github, repo, event.repo.default_branch)
    stored = store.reviews.get(repo, number)
    review = None
    if reviewed:
        review = reviewing.review(github, pull, event.repo.default_branch, config, config_error, stored)
    auto = review is not None and event.action in NEW_HEADS and _benchmark_now(github, pull, review.level,
                                                                                config)
    for request in older:
        benchmarks.stop(services, github, request, contract.SUPERSEDED, config.bench)
    if auto:
        key = contract.work_key("auto", repo, f"{number}:{pull.head_sha}")
        request = benchmarks.new_request(
            services, key=key, repo=repo, installation_id=event.repo.installation_id, number=number,
            base_sha=pull.base_sha, head_sha=pull.head_sha, suites=contract.default_suites(config.bench),
            trigger="auto")
        benchmarks.start(services, github, request, config.bench, event.repo.default_branch)
    sticky.write(services, github, repo, number, pull.head_sha, review)
    if review is not None:
        log.info("reviewed", extra={"repo": repo, "pr": number, "score": review.score, "risk": review.level})


def _benchmark_now(github: GitHub, pull: PullInfo, level: Level, config: RepoConfig) -> bool:
    """Whether the head is benchmarked without asking; the author's permission is asked only when
    everything else says yes."""
    if not policy.auto_candidate(level, pull, config.bench):
        return False
    return policy.auto(level, github.permission(pull.repo, pull.author), pull.fork, config.bench)


# ---------------------------------------------------------------- a close


def _closed(event: PullRequestEvent, services: Services) -> None:
    store, repo, number = services.store, event.repo.full_name, event.number
    running = benchmarks.active(services, repo, number)
    stored = store.reviews.get(repo, number)
    reviewed = stored if stored is not None and stored.head_sha == event.head_sha else None
    merged = event.merged
    level = reviewed.level if reviewed is not None else None
    if not running and not merged:
        return  # nothing to cancel, nothing to record: no need to ask GitHub anything
    github = services.github.for_installation(event.repo.installation_id)
    config: RepoConfig | None = None
    try:
        if merged:
            config = _record_merge(services, github, event, reviewed)
        if not running and level in (None, "none"):
            return
        if config is None:
            config, _ = repo_config.read(github, repo, event.repo.default_branch)
        for request in running:
            benchmarks.stop(services, github, request, contract.CANCELLED, config.bench)
        merge_sha = event.merge_commit_sha
        if merged and merge_sha and contract.SHA.fullmatch(merge_sha) and policy.on_merge(level,
                                                                                          config.bench):
            _benchmark_merge(services, github, event, merge_sha, config)
    except PullRequestGone:
        log.info("repository gone; closed pull request left as it is", extra={"repo": repo, "pr": number})


def _record_merge(services: Services, github: GitHub, event: PullRequestEvent,
                  reviewed: Review | None) -> RepoConfig | None:
    """Record the merge with the risk maintainers saw (the published review of the merged head), or
    with a scoring now when there was none; the config, if it had to be read for that."""
    score, level = (reviewed.score, reviewed.level) if reviewed is not None else (None, None)
    reasons = reviewed.reasons if reviewed is not None else ()
    config = None
    if reviewed is None or not reviewed.blocks:  # no review of this head (or one stored before reasons were)
        try:
            config, config_error = repo_config.read(github, event.repo.full_name, event.repo.default_branch)
            plan = review_plan.plan(review_plan.PullFacts(
                html_url=event.html_url, head_sha=event.head_sha, default_branch=event.repo.default_branch,
                diff=github.pull_diff(event.repo.full_name, event.number), config=config,
                config_error=config_error))
            reasons = reviewing.reasons(plan)
            if reviewed is None:
                score, level = plan.score, plan.level
        except PullRequestGone:
            pass
    services.store.dashboard.record_merge(Merge(
        repo=event.repo.full_name, number=event.number, title=event.title, merge_sha=event.merge_commit_sha,
        head_sha=event.head_sha, score=score, level=level, merged_at=event.merged_at, author=event.author,
        url=event.html_url, reasons=reasons))
    log.info("merge recorded", extra={"repo": event.repo.full_name, "pr": event.number, "level": level})
    return config


def _benchmark_merge(services: Services, github: GitHub, event: PullRequestEvent, merge_sha: str,
                     config: RepoConfig) -> None:
    """A run of the merge commit against its first parent, for the default branch's history."""
    parent = github.first_parent(event.repo.full_name, merge_sha)
    if parent is None:
        return
    request = benchmarks.new_request(
        services, key=contract.work_key("merge", event.repo.full_name, merge_sha), repo=event.repo.full_name,
        installation_id=event.repo.installation_id, number=None, base_sha=parent, head_sha=merge_sha,
        suites=contract.default_suites(config.bench), trigger="merge", requested_by=f"#{event.number}")
    benchmarks.start(services, github, request, config.bench, event.repo.default_branch)
