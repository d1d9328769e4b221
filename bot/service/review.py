"""Risk review of a pull request, as gather -> plan -> apply: read the head, the diff and the default
branch's config; let the core plan the review (`bot.core.review.plan`); publish what it says (one
sticky comment, a check, a label) and save the review.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.core.config import source as config_source
from bot.core.config.schema import RepoConfig
from bot.core.config.source import ConfigSource
from bot.core.render.bench import BenchSection
from bot.core.review import plan as reviewing
from bot.core.risk.scoring import RiskReport

from . import bench_state
from .ports import CheckResult, GitHub, PullRequestGone, Review
from .router import Router
from .services import Services

router = Router()
log = logging.getLogger("perfbot.review")


@dataclass(frozen=True)
class PullRef:
    """The fields of a `pull_request` payload a review needs."""

    repo: str
    number: int
    head_sha: str
    default_branch: str
    html_url: str
    installation_id: int | None

    @classmethod
    def from_payload(cls, payload: dict) -> PullRef:
        pr, repo = payload["pull_request"], payload["repository"]
        installation = (payload.get("installation") or {}).get("id")
        return cls(
            repo["full_name"],
            pr["number"],
            pr["head"]["sha"],
            repo["default_branch"],
            pr["html_url"],
            installation,
        )


def _register(action: str):
    return router.register("pull_request", action)


@_register("opened")
@_register("synchronize")
@_register("reopened")
@_register("ready_for_review")
@_register("edited")
def on_pull_request(payload: dict, services: Services) -> None:
    if payload["action"] == "edited" and "base" not in (payload.get("changes") or {}):
        return  # a title or body edit cannot change the risk
    pr = payload["pull_request"]
    if pr.get("state") != "open" or pr.get("draft"):
        return
    ref = PullRef.from_payload(payload)
    try:
        github = services.github.for_installation(ref.installation_id)
        if github.pull_head_sha(ref.repo, ref.number) != ref.head_sha:
            log.info("superseded by a newer push; skipped", extra={"repo": ref.repo, "pr": ref.number})
            return
        section = bench_state.section_for(services.store, ref.repo, ref.number, ref.head_sha)
        apply(github, services, ref, reviewing.plan(gather(github, ref, section)))
    except PullRequestGone:
        log.info("pull request gone; dropped", extra={"repo": ref.repo, "pr": ref.number})


def gather(github: GitHub, ref: PullRef, bench: BenchSection | None = None) -> reviewing.PullFacts:
    """What the review decides on: the config of the default branch (never the PR head's), then the
    diff; ``bench``: the pull request's benchmark, shown below the review."""
    config, error = default_branch_config(github, ref)
    diff = github.pull_diff(ref.repo, ref.number)
    return reviewing.PullFacts(ref.html_url, ref.head_sha, ref.default_branch, diff, config, error, bench)


def assess(github: GitHub, ref: PullRef) -> tuple[RiskReport, str | None]:
    """Score the PR's diff under the config of the default branch (never the PR head's)."""
    return reviewing.assess(gather(github, ref))


def default_branch_config(github: GitHub, ref: PullRef) -> tuple[RepoConfig, str | None]:
    source = ConfigSource.default_branch(ref.default_branch)
    text = github.read_file(ref.repo, source.path, ref.default_branch)
    return config_source.read_or_defaults(text, source)


def apply(github: GitHub, services: Services, ref: PullRef, plan: reviewing.ReviewPlan) -> None:
    comment_id = github.upsert_comment(ref.repo, ref.number, plan.comment.marker, plan.comment.body,
                                       create=plan.comment.create)
    check = plan.check
    github.publish_check(ref.repo, CheckResult(check.name, check.head_sha, check.conclusion, check.title,
                                               check.summary))
    github.sync_labels(ref.repo, ref.number, plan.label.prefix, plan.label.wanted)
    record = plan.record
    services.store.save_review(
        Review(ref.repo, ref.number, record.head_sha, record.score, record.level, comment_id)
    )
    log.info(
        "reviewed", extra={"repo": ref.repo, "pr": ref.number, "score": record.score, "risk": record.level}
    )
