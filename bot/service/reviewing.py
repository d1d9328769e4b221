"""A pull request's risk review, applied: publish a `ReviewPlan`'s check run and label (unless the
stored review of the same head says the same already), and hand back the review to store with the
sticky comment.

The `pull_request` pipeline plans the review of every push in the core (`bot.core.review.plan`) and
publishes it here; the `/bench` and `workflow_run` pipelines review (`missing`) only a head that
has no stored review to compose the comment from (a pull request opened before the bot was
installed, or a review stored by an older version without its rendered blocks).
"""

from __future__ import annotations

from bot.core.pulls import PullInfo
from bot.core.review import plan as reviewing

from . import repo_config, step_maps
from .ports.github import GitHub
from .records import Review
from .repo_config import ConfigRead
from .services import Services


def publish(github: GitHub, stored: Review | None, pull: PullInfo, plan: reviewing.ReviewPlan) -> Review:
    """Publish the review's check run and label, unless the stored review of this head says the
    same already; the review to store (its comment is written with the benchmarks' section)."""
    same_head = stored is not None and stored.head_sha == plan.head_sha
    unchanged = (
        same_head and stored is not None and (stored.blocks, stored.level) == (plan.blocks, plan.level)
    )
    check_run_id = stored.check_run_id if same_head and stored is not None else None
    if not unchanged:
        check_run_id = github.publish_check(pull.repo, plan.check, check_run_id)
        github.sync_labels(pull.repo, pull.number, plan.label.prefix, plan.label.wanted)
    return Review(
        repo=pull.repo,
        number=pull.number,
        head_sha=plan.head_sha,
        score=plan.score,
        level=plan.level,
        comment_id=stored.comment_id if stored is not None else None,
        check_run_id=check_run_id,
        blocks=plan.blocks,
        wants_comment=plan.wants_comment,
        reasons=plan.reasons,
    )


def missing(
    services: Services,
    github: GitHub,
    repo: str,
    number: int,
    default_branch: str,
    pull: PullInfo | None = None,
    config: ConfigRead | None = None,
) -> Review | None:
    """A review of the pull request's head when the store has none to compose its comment from
    (None when it has one, of ``pull``'s head when that is known: nothing is read). ``pull`` and
    ``config``: the pull request and the default branch's config, when already read."""
    stored = services.store.reviews.get(repo, number)
    if stored is not None and stored.blocks and (pull is None or stored.head_sha == pull.head_sha):
        return None
    pull = pull or github.pull(repo, number)
    if not reviewing.reviewed(pull):
        return None
    config = (
        config
        if config is not None
        else repo_config.read(github, repo, default_branch, services.store.config_problems)
    )
    diff = github.pull_diff(repo, number)
    facts = reviewing.PullFacts(
        html_url=pull.html_url,
        head_sha=pull.head_sha,
        default_branch=default_branch,
        diff=diff,
        config=config.config,
        config_error=config.problem,
        step_map=step_maps.evidence(services, github, repo, step_maps.changed_paths(diff), diff),
    )
    plan = reviewing.plan(facts, services.assess(facts))
    return publish(github, stored, pull, plan)
