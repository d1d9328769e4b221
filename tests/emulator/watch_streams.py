"""Streams of default-branch runs played on the GitHub emulator for the watch's end-to-end tests:
a history of commits on the default branch, scheduled runs started by the bot's own hourly task,
pull requests merged and their merge runs, each run's results artifact built from a seeded,
deterministic series (`stepped`), and the bisect's report of a range as `perfbot bisect` writes it.

The bot is the whole live one of `tests.emulator.live` (signed deliveries, the queue's consumer,
PyGithub against the emulator); only the GPU runner's part is played here."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from bot.adapters.queue import SCHEDULE_TASK
from bot.core.bench import contract
from bot.core.bisect import plan as bisection
from bot.core.bisect import report as bisect_report
from bot.core.render.comment import MARKER
from bot.core.risk.scoring import RiskReport
from bot.service.records import Repository
from tests.core.bench.zips import archive
from tests.core.judge.results_data import FINGERPRINT, document
from tests.emulator import live
from tests.emulator.bench_support import finish
from tests.service import diffs
from tests.support import github_data
from tests.support.github_emulator import GitHubEmulator, RepoState

SUITE = "spin"
# Pull request runs never start by themselves (`auto: never`): a merged pull request's merge run
# and the daily scheduled run are the series; the budget is no part of these tests.
CONFIG = (
    diffs.BASE_CONFIG
    + f"""bench:
  suites:
    {SUITE}: {{kind: command, command: "true"}}
  dispatch:
    auto: never
    schedule: daily
    schedule_hour: 0
    budget: unlimited
    cooldown: {{user: 0, pr: 0}}
"""
)
FIRST_DAY = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
ROOT = "0" * 39 + "1"
MARKED = "<!-- perfbot:regression:"
TODAYS_DRIVER = "999.1"  # the driver of the bisect's runs, not the one of the runs that found a case


def stepped(n: int = 40, at: int = 20, step: float = 0.08, cv: float = 0.01, seed: int = 1) -> list[float]:
    """A series of ``n`` points around 10 with relative noise ``cv`` (seeded), ``step`` higher from
    point ``at`` on."""
    rng = np.random.default_rng(seed)
    values = 10 * (1 + rng.normal(0, cv, n))
    values[at:] *= 1 + step
    return [float(v) for v in values]


def noisy(n: int = 40, scale: float = 0.15, seed: int = 3) -> list[float]:
    """A level series with heavy tails (Student's t, 3 degrees of freedom): a serving p99."""
    return [float(v) for v in 10 * (1 + np.random.default_rng(seed).standard_t(3, n) * scale)]


def rounds(value: float, scatter: float) -> list[float]:
    """Three rounds whose median is ``value``, ``scatter`` apart (relative)."""
    return [value * (1 - scatter), value, value * (1 + scatter)]


@dataclass
class Main:
    """The default branch's history in the emulator, and the runs the bot dispatched on it."""

    bot: live.LiveBot
    emulator: GitHubEmulator
    state: RepoState
    head: str = ROOT
    count: int = 0
    next_pull: int = 100
    day: int = 0

    @classmethod
    def start(cls, bot: live.LiveBot, emulator: GitHubEmulator, state: RepoState) -> Main:
        state.parents[ROOT] = []
        state.branches[live.DEFAULT_BRANCH] = ROOT
        bot.runtime.store.installations.replace(1, [Repository(1, live.REPO, 1, private=False)])
        return cls(bot, emulator, state)

    def sha(self, kind: str) -> str:
        """A new commit's sha: a kind's hex digit and a count, which its first 7 digits already
        tell apart from every other commit's (as `/bench bisect` names them), then the kind again."""
        self.count += 1
        return f"{kind}{self.count:06x}".ljust(40, kind)

    def commit(self, kind: str = "e", *more_parents: str) -> str:
        """A commit on top of the branch's head, which it becomes."""
        sha = self.sha(kind)
        self.state.parents[sha] = [self.head, *more_parents]
        self.head = self.state.branches[live.DEFAULT_BRANCH] = sha
        return sha

    # ------------------------------------------------------------ pull requests merged

    def merge(
        self, diff: str = diffs.HIGH, *, commits: int = 1, squash: bool = False, base_ref: str | None = None
    ) -> tuple[int, list[str], str]:
        """A pull request of ``commits`` commits, opened, then merged into the default branch (or
        into ``base_ref``, leaving the default branch as it was) with a merge commit, or squashed
        into one commit on top of the branch: its number, its commits (oldest first) and the merge
        commit. Its merge run, if any, is left dispatched."""
        number, self.next_pull = self.next_pull, self.next_pull + 1
        pushed, parent = [], self.head
        for _ in range(commits):
            pushed.append(self.sha("b"))
            self.state.parents[pushed[-1]] = [parent]
            parent = pushed[-1]
        head, branch = pushed[-1], base_ref or live.DEFAULT_BRANCH
        pull = self.emulator.add_pull(live.REPO, number, head, diff, base_sha=self.head, base_ref=branch)
        if base_ref is not None:
            merge = self.sha("c")
            self.state.parents[merge] = [self.head, head]
        else:
            merge = self.commit("c") if squash else self.commit("c", head)
        for action in ("opened", "closed"):
            payload = github_data.pull_request(
                action, head_sha=head, number=number, repo=live.REPO, installation_id=1
            )
            payload["pull_request"]["base"]["ref"] = branch
            if action == "closed":
                payload["pull_request"]["merge_commit_sha"] = merge
                pull.state, pull.merged, pull.merge_sha = "closed", True, merge
            assert self.bot.deliver("pull_request", payload).status_code == 202
            self.bot.wait_idle()
        return number, pushed, merge

    def say(self, body: str, number: int, login: str = "maintainer") -> None:
        """A comment posted on pull request ``number`` and its `issue_comment` event delivered."""
        posted = self.emulator.add_comment(live.REPO, number, body, login)
        payload = github_data.issue_comment(
            body, number=number, repo=live.REPO, installation_id=1, login=login, comment_id=posted["id"]
        )
        assert self.bot.deliver("issue_comment", payload).status_code == 202
        self.bot.wait_idle()

    def replies(self, number: int) -> list[str]:
        """The bot's comments on pull request ``number``, but its sticky review."""
        return [
            c["body"]
            for c in self.emulator.comments_on(live.REPO, number)
            if c["user"]["type"] == "Bot" and not c["body"].startswith(MARKER)
        ]

    # ------------------------------------------------------------ runs

    def scheduled(self) -> dict | None:
        """The bot's hourly task on the next day: the scheduled run it dispatched (None: none)."""
        at = FIRST_DAY + timedelta(days=self.day)
        self.day += 1
        before = len(self.emulator.dispatches)
        self.hourly(at)
        started = [d for d in self.emulator.dispatches[before:] if d["inputs"].get("mode") != "bisect"]
        return started[-1] if started else None

    def hourly(self, at: datetime) -> None:
        """The queue's hourly task (the sweep, then the scheduled run), run now on this thread with
        the clock at ``at``: the bot's consumer runs no periodic task itself (`Main.start`'s bot is
        started with them off) and is idle meanwhile, so the clock is no other job's."""
        services = self.bot.runtime.services
        self.bot.wait_idle()
        [task] = [t for t in self.bot.runtime.queue.huey._registry.periodic_tasks if t.name == SCHEDULE_TASK]
        real = services.now
        services.now = lambda: at
        try:
            task.execute()
        finally:
            services.now = real

    def complete(
        self,
        dispatched: dict,
        values: Mapping[str, tuple[float, float]],
        scatter: float = 0.002,
        conclusion: str = "success",
    ) -> None:
        """The run's results artifact uploaded (each metric's base and head level, three rounds a
        side ``scatter`` apart), the run completed and its `workflow_run` delivered; then idle."""
        inputs = dispatched["inputs"]
        metrics = {
            name: ("ms", "lower", rounds(base, scatter), rounds(head, scatter))
            for name, (base, head) in values.items()
        }
        doc = document(metrics, suite=SUITE)
        doc["base"]["sha"], doc["head"]["sha"] = inputs["base-sha"], inputs["head-sha"]
        artifact = (
            contract.artifact_name(inputs["correlation-id"]),
            archive({"results.json": json.dumps(doc)}),
        )
        response = finish(self.bot, self.emulator, dispatched["run_id"], conclusion, artifact=artifact)
        assert response.status_code == 202
        self.bot.wait_idle()

    def complete_without_results(self, dispatched: dict, conclusion: str = "failure") -> None:
        """The run completed with no artifact (it failed before writing one); then idle."""
        response = finish(self.bot, self.emulator, dispatched["run_id"], conclusion)
        assert response.status_code == 202
        self.bot.wait_idle()

    def daily(self, levels: Mapping[str, float]) -> None:
        """One day: a commit lands (not measured), the day's head on top of it, and the scheduled
        run of that head against its parent measures ``levels`` on both (nothing changed between
        them)."""
        self.commit("a")
        self.commit("d")
        dispatched = self.scheduled()
        assert dispatched is not None and dispatched["inputs"]["head-sha"] == self.head, dispatched
        self.complete(dispatched, {name: (value, value) for name, value in levels.items()})

    # ------------------------------------------------------------ what the bot did

    def bisects(self) -> list[dict]:
        return [d for d in self.emulator.dispatches if d["inputs"].get("mode") == "bisect"]

    def culprit_comments(self) -> list[dict]:
        """Every comment naming a culprit: on pull requests and on commits."""
        on_pulls = [c for c in self.emulator.comments.values() if c["body"].startswith(MARKED)]
        return on_pulls + [c for c in self.emulator.commit_comments if c["body"].startswith(MARKED)]

    def report_back(self, dispatched: dict, report: dict, conclusion: str = "success") -> None:
        """The bisect's artifact (its report, with the reference run's and the confirmation's
        results files) uploaded, its run completed and delivered; then idle."""
        inputs = dispatched["inputs"]
        files = {
            "bisect.json": json.dumps(report).encode(),
            "reference.results.json": _results(report["good"], report["bad"], report["metric"]),
        }
        if report.get("culprit"):
            culprit = report["culprit"]
            files["confirm.results.json"] = _results(
                culprit.get("parent") or report["good"], culprit["sha"], report["metric"]
            )
        artifact = (contract.artifact_name(inputs["correlation-id"]), archive(files))
        response = finish(self.bot, self.emulator, dispatched["run_id"], conclusion, artifact=artifact)
        assert response.status_code == 202
        self.bot.wait_idle()


def _results(base: str, head: str, metric: str) -> bytes:
    doc = document({metric: ("ms", "lower", rounds(10.0, 0.002), rounds(10.8, 0.002))}, suite=SUITE)
    doc["base"]["sha"], doc["head"]["sha"] = base, head
    return json.dumps(doc).encode()


def _measurement(purpose: str, base: str, head: str, bad: bool, path: str) -> bisect_report.Measurement:
    ratio = 1.08 if bad else 1.0
    return bisect_report.Measurement(
        purpose,
        base,
        head,
        "bad" if bad else "ok",
        "regression" if bad else "unchanged",
        ratio,
        (ratio - 0.01, ratio + 0.01),
        0.001,
        path,
        "the metric's runs",
    )


def culprit_report(
    good: str, bad: str, commits: Sequence[str], culprit: str, metric: str, subject: str = "Slow the step"
) -> dict:
    """The report `perfbot bisect` writes when it confirmed ``culprit`` in GOOD..BAD (``commits``,
    oldest first): the reference run, a probe of each commit up to the culprit, the confirmation
    of the culprit against its parent."""
    blank = RiskReport(score=0, level="none", profile="generic", files=[], signals=[])
    at = list(commits).index(culprit) if culprit in commits else len(commits) - 1
    parent = commits[at - 1] if at > 0 else good
    runs = [_measurement("reference", good, bad, True, bisect_report.REFERENCE_RESULTS)]
    runs += [
        _measurement("probe", good, sha, sha == culprit, f"/tmp/probe-{sha[:10]}.json")
        for sha in commits[: at + 1]
    ]
    report = bisect_report.conclude(
        bisection.Culprit(culprit, parent, len(runs)),
        good=good,
        bad=bad,
        suite=SUITE,
        metric=metric,
        commits=list(commits),
        suspects={sha: bisect_report.Suspect(sha, subject, blank) for sha in commits},
        measurements=runs,
        confirmation=_measurement("confirm", parent, culprit, True, bisect_report.CONFIRM_RESULTS),
        fingerprints=bisect_report.side_fingerprints(FINGERPRINT, FINGERPRINT),
    )
    return dict(report.to_dict())


def no_culprit_report(good: str, bad: str, commits: int, metric: str, verdict: str = "inconclusive") -> dict:
    """The report `perfbot bisect` writes when GOOD against BAD, measured again, did not show the
    regression (``verdict``: unchanged, or only inconclusive), in an environment whose driver is not
    the one the runs that found it had (999.1)."""
    ratio = 1.01 if verdict == "inconclusive" else 1.0
    reference = bisect_report.Measurement(
        "reference",
        good,
        bad,
        None,
        verdict,
        ratio,
        (0.97, 1.05) if verdict == "inconclusive" else (0.995, 1.005),
        0.4,
        bisect_report.REFERENCE_RESULTS,
        "the metric's runs",
    )
    today = bisect_report.side_fingerprints(FINGERPRINT, {**FINGERPRINT, "driver": TODAYS_DRIVER})
    report = bisect_report.not_reproduced(
        reference, suite=SUITE, metric=metric, commits=commits, fingerprints=today
    )
    return dict(report.to_dict())
