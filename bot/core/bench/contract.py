"""The bot-runner contract: the workflow inputs the bot dispatches, the run name it finds the run
by, the artifact it downloads, and the states a request goes through.

The correlation id is derived from the work key of the request (a comment id, a head sha, a merge
sha), so that a retry or a replay of the same work finds the request it already recorded instead
of dispatching a second run.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from bot.core import metric_names
from bot.core.config import suite_kinds
from bot.core.config.schema import BenchConfig

# The states of a request and its triggers are the vocabulary's, re-exported for the contract's readers.
from bot.core.vocabulary import ACTIVE as ACTIVE
from bot.core.vocabulary import CANCELLED as CANCELLED
from bot.core.vocabulary import COMPLETED as COMPLETED
from bot.core.vocabulary import DISPATCHING as DISPATCHING
from bot.core.vocabulary import FAILED as FAILED
from bot.core.vocabulary import REQUESTED as REQUESTED
from bot.core.vocabulary import RUNNING as RUNNING
from bot.core.vocabulary import SUPERSEDED as SUPERSEDED
from bot.core.vocabulary import Trigger as Trigger

RUN_NAME = "perfbot bench {correlation_id}"  # the run-name of the workflow; correlation_in reads it
ARTIFACT = "perfbot-results-{correlation_id}"
CORRELATION_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_IN_TITLE = re.compile(r"(?:^|\s)perfbot bench ([A-Za-z0-9._-]{1,64})(?:\s|$)")
SHA = re.compile(r"[0-9a-f]{40}")
SUITE = re.compile(r"[A-Za-z0-9._-]{1,64}")
DEFAULT_SUITE = "verify-step"
# The suites `perfbot bench run` knows without a config entry: the built-in kinds' names.
BUILT_IN_SUITES = suite_kinds.built_in()


def work_key(trigger: Trigger, repo: str, subject: str) -> str:
    """The key of one piece of benchmark work: ``subject`` is the comment id of a `/bench`, the head
    sha of an automatic run, the merge sha of a merge run, the slot of a scheduled run."""
    return f"bench:{trigger}:{repo}:{subject}"


def correlation_id(key: str) -> str:
    """The request's id for the runner: the same for the same work, unlike for different work."""
    return "pb-" + hashlib.sha256(key.encode()).hexdigest()[:24]


def artifact_name(correlation: str) -> str:
    return ARTIFACT.format(correlation_id=correlation)


def correlation_in(title: str | None) -> str | None:
    """The correlation id a run's display title carries (``perfbot bench <id>``), if any."""
    found = _IN_TITLE.search(title or "")
    return found.group(1) if found else None


def inputs(
    number: int | None,
    base_sha: str,
    head_sha: str,
    suites: Sequence[str],
    rounds: int | None,
    max_rounds: int | None,
    correlation: str,
) -> dict[str, str]:
    """The `workflow_dispatch` inputs, all strings, as the contract names them."""
    for sha in (base_sha, head_sha):
        if not SHA.fullmatch(sha):
            raise ValueError(f"not a 40-hex commit sha: {sha[:50]!r}")
    if not CORRELATION_ID.fullmatch(correlation):
        raise ValueError("not a correlation id")
    return {
        "pr": "" if number is None else str(number),
        "base-sha": base_sha,
        "head-sha": head_sha,
        "suites": " ".join(suites),
        "rounds": "" if rounds is None else str(rounds),
        "max-rounds": "" if max_rounds is None else str(max_rounds),
        "correlation-id": correlation,
    }


# A metric to bisect on: any the results contract accepts, or "" for the suite's headline metric.
METRIC = re.compile(f"(?:{metric_names.NAME})?")
BISECT = "bisect"  # the `mode` input of a bisect; a bench run sends no mode (workflows before it lack it)


def bisect_inputs(
    good: str, bad: str, suite: str, metric: str, rounds: int | None, max_rounds: int | None, correlation: str
) -> dict[str, str]:
    """The `workflow_dispatch` inputs of a bisect of GOOD..BAD on one suite (``metric`` "": the
    suite's headline metric): a default-branch run, so no pull request."""
    if not SUITE.fullmatch(suite):
        raise ValueError(f"not one suite name: {suite[:70]!r}")
    if not METRIC.fullmatch(metric):
        raise ValueError(f"not a metric name ({metric_names.WHAT}): {metric[:110]!r}")
    bench = inputs(None, good, bad, (suite,), rounds, max_rounds, correlation)
    return {**bench, "mode": BISECT, "metric": metric}


def default_suites(bench: BenchConfig) -> tuple[str, ...]:
    """What a run measures when nobody named suites: the dispatch section's list, else every suite
    the config declares, else the built-in verify step."""
    if bench.dispatch.suites:
        return tuple(bench.dispatch.suites)
    return tuple(bench.suites) or (DEFAULT_SUITE,)


def known_suites(bench: BenchConfig) -> tuple[str, ...]:
    return tuple(sorted({*bench.suites, *BUILT_IN_SUITES}))
