"""A pull request's risk review, applied: plan it in the core (`bot.core.review.plan`) from the diff
and the default branch's config, publish its check run and label (unless the stored review of the
same head says the same already), and hand back the review to store with the sticky comment.

The `pull_request` pipeline reviews every push; the `/bench` and `workflow_run` pipelines review
only a head that has no stored review to compose the comment from (a pull request opened before
the bot was installed, or a review stored by an older version without its rendered blocks).
"""

from __future__ import annotations

from bot.core.config.schema import RepoConfig
from bot.core.pulls import PullInfo
from bot.core.review import plan as reviewing

from . import repo_config
from .ports import GitHub
from .records import Reason, Review
from .services import Services


def review(github: GitHub, pull: PullInfo, default_branch: str, config: RepoConfig, config_error: str | None,
           stored: Review | None) -> Review:
    """Review the pull request's head now; the review to store (not stored yet)."""
    plan = reviewing.plan(reviewing.PullFacts(
        html_url=pull.html_url, head_sha=pull.head_sha, default_branch=default_branch,
        diff=github.pull_diff(pull.repo, pull.number), config=config, config_error=config_error))
    return publish(github, stored, pull, plan)


def publish(github: GitHub, stored: Review | None, pull: PullInfo, plan: reviewing.ReviewPlan) -> Review:
    """Publish the review's check run and label, unless the stored review of this head says the
    same already; the review to store (its comment is written with the benchmarks' section)."""
    same_head = stored is not None and stored.head_sha == plan.head_sha
    unchanged = same_head and stored is not None and (stored.blocks, stored.level) == (plan.blocks,
                                                                                       plan.level)
    check_run_id = stored.check_run_id if same_head and stored is not None else None
    if not unchanged:
        check_run_id = github.publish_check(pull.repo, plan.check, check_run_id)
        github.sync_labels(pull.repo, pull.number, plan.label.prefix, plan.label.wanted)
    return Review(repo=pull.repo, number=pull.number, head_sha=plan.head_sha, score=plan.score,
                  level=plan.level,
                  comment_id=stored.comment_id if stored is not None else None, check_run_id=check_run_id,
                  blocks=plan.blocks, wants_comment=plan.wants_comment, reasons=reasons(plan))


def reasons(plan: reviewing.ReviewPlan) -> tuple[Reason, ...]:
    """What the dashboard keeps of the review's reasons, heaviest first."""
    return tuple(Reason(s.rule, s.weight, s.sentence()) for s in plan.signals)


def missing(services: Services, github: GitHub, repo: str, number: int, default_branch: str,
            pull: PullInfo | None = None, config: tuple[RepoConfig,
                                                        str | None] | None = None) -> Review | None:
    """A review of the pull request's head when the store has none to compose its comment from
    (None when it has one, of ``pull``'s head when that is known: nothing is read). ``pull`` and
    ``config``: the pull request and the default branch's config, when already read."""
    stored = services.store.reviews.get(repo, number)
    if stored is not None and stored.blocks and (pull is None or stored.head_sha == pull.head_sha):
        return None
    pull = pull or github.pull(repo, number)
    if not pull.open or pull.draft:
        return None
    found, problem = config or repo_config.read(github, repo, default_branch)
    return review(github, pull, default_branch, found, problem, stored)
