"""`/bench` commands in pull request comments and review bodies: parse (`bot.core.commands`),
decide who may do what (`bot.core.bench.policy`), then act and answer: a reaction (eyes, then
rocket once dispatched), or `confused` and one short reply that says why and what to do.

Only new comments count: edits and deletions are not routed here, and comments by bots (this
one included) are ignored. Each comment is handled once, whatever delivery carries it: its
benchmark request is keyed on the comment's id, and so are its replies.
"""

from __future__ import annotations

import logging

from bot.core.bench import contract, policy
from bot.core.commands import grammar
from bot.core.render import bench as render_bench

from . import bench, review
from .ports import Ack, BenchRequest, GitHub, PullInfo, PullRequestGone
from .router import Router
from .services import Services

router = Router()
log = logging.getLogger("perfbot.commands")


def _mentions_bench(payload: dict) -> bool:
    """Cheap test at intake, so that the thousands of other comments are not stored and queued."""
    body = (payload.get("comment") or payload.get("review") or {}).get("body")
    return isinstance(body, str) and grammar.PREFIX in body[: grammar.MAX_COMMENT]


@router.register("issue_comment", "created", when=_mentions_bench)
def on_comment(payload: dict, services: Services) -> None:
    comment, issue = payload["comment"], payload["issue"]
    if not issue.get("pull_request") or _by_a_bot(comment.get("user"), comment):
        return  # a comment on an issue, or a bot's: not a command
    _handle(payload, services, issue["number"], comment["user"]["login"], comment.get("body") or "",
            subject=str(comment["id"]), comment_id=comment["id"])


@router.register("pull_request_review", "submitted", when=_mentions_bench)
def on_review(payload: dict, services: Services) -> None:
    reviewed = payload["review"]
    if _by_a_bot(reviewed.get("user"), reviewed):
        return
    # A review body has no reactions: its answers are replies only.
    _handle(payload, services, payload["pull_request"]["number"], reviewed["user"]["login"],
            reviewed.get("body") or "", subject=f"review-{reviewed['id']}", comment_id=None)


def _by_a_bot(user: dict | None, item: dict) -> bool:
    user = user or {}
    return (user.get("type") == "Bot" or bool(item.get("performed_via_github_app"))
            or str(user.get("login", "")).endswith("[bot]"))


def _handle(payload: dict, services: Services, number: int, login: str, body: str, subject: str,
            comment_id: int | None) -> None:
    command = grammar.find(body)
    if command is None:
        return
    repo = payload["repository"]["full_name"]
    done = f"command:{repo}:{subject}"
    if services.store.work_done(done):
        log.info("command handled before; replay ignored", extra={"repo": repo, "pr": number})
        return
    installation = (payload.get("installation") or {}).get("id")
    default_branch = payload["repository"]["default_branch"]
    github = services.github.for_installation(installation)
    try:
        pull = github.pull(repo, number)
    except PullRequestGone:
        return
    context = _Context(services, github, repo, installation, default_branch, pull, login, subject, comment_id)
    context.act(command)
    services.store.claim_work(done)


class _Context:
    """One command being handled: where it was written, by whom, about which pull request."""

    def __init__(self, services: Services, github: GitHub, repo: str, installation: int | None,
                 default_branch: str, pull: PullInfo, login: str, subject: str, comment_id: int | None):
        self.services, self.github, self.repo, self.installation = services, github, repo, installation
        self.default_branch, self.pull, self.login = default_branch, pull, login
        self.subject, self.comment_id = subject, comment_id
        ref = review.PullRef(repo, pull.number, pull.head_sha, default_branch, pull.html_url, installation)
        self.config, _ = review.default_branch_config(github, ref)

    @property
    def key(self) -> str:
        return contract.work_key("command", self.repo, self.subject)

    def act(self, command: grammar.Command) -> None:
        store, pull = self.services.store, self.pull
        recorded = store.bench_request(contract.correlation_id(self.key))
        if recorded is not None:  # accepted before, then interrupted: carry on, do not decide again
            self._started(bench.resume(self.services, self.github, recorded, self.config,
                                       self.default_branch))
            return
        running = bench.active(store, self.repo, pull.number)
        facts = policy.Facts(
            pull=policy.Pull(pull.number, pull.open, pull.head_sha, pull.base_sha, pull.fork, pull.author),
            login=self.login, permission=self.github.permission(self.repo, self.login),
            approved=store.approved(self.repo, pull.number, pull.head_sha),
            active=policy.Active(running[0].head_sha, running[0].run_url) if running else None,
            user_last=store.last_command(self.repo, user=self.login),
            pr_last=store.last_command(self.repo, number=pull.number),
            now=self.services.now())
        decision = policy.decide(command, facts, self.config.bench)
        log.info("command", extra={"repo": self.repo, "pr": pull.number, "user": self.login,
                                   "decision": type(decision).__name__})
        if isinstance(decision, policy.Refuse):
            self._react("confused")
            self._reply(render_bench.refusal_reply(decision.reason, decision.hint),
                        once_per_person=facts.permission not in policy.WRITE)
            return
        self._react("eyes")
        if isinstance(decision, policy.ShowHelp):
            bench_config = self.config.bench
            answer = render_bench.help_reply(contract.default_suites(bench_config),
                                             contract.known_suites(bench_config),
                                             bench_config.dispatch.max_rounds)
            self._reply(answer, once_per_person=facts.permission not in policy.WRITE)
        elif isinstance(decision, policy.ApproveHead):
            store.approve(self.repo, pull.number, decision.head_sha, self.login)
            self._react("+1")
        elif isinstance(decision, policy.Acknowledge):
            store.add_ack(Ack(self.repo, pull.number, decision.head_sha, self.login, decision.reason,
                              self.comment_id, self.services.now()), f"ack:{self.repo}:{self.subject}")
            self._react("+1")
        elif isinstance(decision, policy.CancelRun):
            for request in running:
                bench.stop(self.services, self.github, request, contract.CANCELLED, self.config,
                           self.default_branch)
            self._react("+1")
        else:
            self._dispatch(decision)

    def _dispatch(self, decision: policy.Dispatch) -> None:
        pull = self.pull
        bench.supersede(self.services, self.github, self.repo, pull.number, pull.head_sha, self.config,
                        self.default_branch)
        ask = bench.Ask(self.repo, self.installation, pull.number, pull.base_sha, pull.head_sha,
                        decision.suites, decision.rounds, decision.max_rounds, "command", self.key,
                        self.login, self.comment_id)
        self._started(bench.start(self.services, self.github, ask, self.config, self.default_branch))

    def _started(self, request: BenchRequest) -> None:
        if request.status == contract.RUNNING:
            self._react("rocket")
        elif request.status == contract.FAILED:
            self._react("confused")

    def _react(self, content: str) -> None:
        if self.comment_id is not None:
            self.github.react(self.repo, self.comment_id, content)

    def _reply(self, body: str, once_per_person: bool) -> None:
        """One reply per command; to someone without write access, one per pull request, so that
        nobody can make the bot comment in a loop."""
        store = self.services.store
        if once_per_person and not store.claim_work(f"told:{self.repo}:{self.pull.number}:{self.login}"):
            return
        if store.claim_work(f"reply:{self.repo}:{self.subject}"):
            self.github.reply(self.repo, self.pull.number, body)
