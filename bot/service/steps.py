"""The pipeline of the bot's own jobs (`bot.service.chain`): the watch's steps after a run on the
default branch, each gather → decide → apply, queueing the next.

- look: the finished run's series looked at (`watch.look`, the store alone); each case still open
  goes on to its dispatch, each bisect superseded by a wider range to its release;
- dispatch: the case's bisect charged and dispatched once (`watch.bisect`); its run's completion
  comes back as a `workflow_run` delivery (`bot.service.runs`), which ends the case and queues
  the announcement of a confirmed culprit;
- release: a superseded bisect's run stopped, its reserve given back (`watch.release`);
- announce: the culprit named on its pull request, once per culprit (`watch.announce`).

A job whose subject has moved on meanwhile (a case no longer open, a culprit named) does nothing.
"""

from __future__ import annotations

from dataclasses import replace

from bot.core.bench import contract
from bot.core.watch import budget
from bot.core.watch import cases as states

from . import repo_config, watch
from .chain import ANNOUNCE, DISPATCH, LOOK, RELEASE, Step, queue
from .services import Services


def wants(step: Step) -> bool:
    return True  # every parsed step is work


def handle(step: Step, services: Services) -> None:
    {LOOK: _look, DISPATCH: _dispatch, RELEASE: _release, ANNOUNCE: _announce}[step.action](step, services)


def _look(step: Step, services: Services) -> None:
    request = services.store.benchmarks.get(step.subject)
    if request is None or request.repo != step.repo or request.status != contract.COMPLETED:
        return
    looked = watch.look(services, request)
    for key in looked.release:
        queue(services, replace(step, action=RELEASE, subject=key))
    day = budget.day(services.now())
    for key in looked.dispatch:
        # once a day: a case left out of today's budget is tried again by a later day's look
        queue(services, replace(step, action=DISPATCH, subject=key), f"{key}\0{day}")


def _dispatch(step: Step, services: Services) -> None:
    case = services.store.watch.get(step.subject)
    if case is None or case.repo != step.repo or case.state not in states.ACTIVE:
        return
    github = services.github.for_installation(case.installation_id)
    config = repo_config.read(github, step.repo, step.default_branch).config
    watch.bisect(services, github, case, config, step.default_branch)


def _release(step: Step, services: Services) -> None:
    case = services.store.watch.get(step.subject)
    if case is None or case.repo != step.repo or case.state != states.SUPERSEDED:
        return
    github = services.github.for_installation(case.installation_id)
    config = repo_config.read(github, step.repo, step.default_branch).config
    watch.release(services, github, case, config)


def _announce(step: Step, services: Services) -> None:
    case = services.store.watch.get(step.subject)
    if case is None or case.repo != step.repo or not watch.unannounced(case):
        return
    github = services.github.for_installation(case.installation_id)
    config = repo_config.read(github, step.repo, step.default_branch).config
    watch.announce(services, github, case, config)
