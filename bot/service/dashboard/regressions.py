"""The dashboard's "regressions on main": the regression cases a viewer may see (newest first,
optionally of one commit), today's GPU budget of their repositories (spent, and skipped for it),
and one case with what its bisect found; for a case that was not reproduced, the environment
fingerprints of the original run beside those of today's."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.core.bench import contract
from bot.core.watch import budget
from bot.core.watch import cases as states

from ..ports.store import Spending
from ..records import BenchResult, RegressionCase
from ..services import Services

SHOWN = 200


@dataclass(frozen=True)
class Listing:
    cases: list[RegressionCase]
    spending: dict[str, Spending]  # today's, by repository shown
    day: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "cases": [case_dict(c) for c in self.cases],
            "budget": {
                repo: {
                    "spent_minutes": s.spent,
                    "limit_minutes": s.limit,
                    "skipped": s.skipped,
                    "skipped_minutes": s.skipped_minutes,
                }
                for repo, s in self.spending.items()
            },
        }


@dataclass(frozen=True)
class FingerprintRow:
    key: str
    original_good: str | None
    today_good: str | None
    original_bad: str | None
    today_bad: str | None


@dataclass(frozen=True)
class CaseDetail:
    case: RegressionCase
    outcome: dict[str, Any]  # what the bisect found (empty before it reported)
    fingerprints: list[FingerprintRow]  # the original run's and today's, where they differ first

    def to_dict(self) -> dict[str, Any]:
        rows = [
            {
                "key": r.key,
                "original": {"good": r.original_good, "bad": r.original_bad},
                "today": {"good": r.today_good, "bad": r.today_bad},
            }
            for r in self.fingerprints
        ]
        outcome = {k: v for k, v in self.outcome.items() if k != "fingerprints"}
        return {**case_dict(self.case), "outcome": outcome, "fingerprints": rows}


def case_dict(case: RegressionCase) -> dict[str, Any]:
    return {
        "key": case.key,
        "repo": case.repo,
        "suite": case.suite,
        "metric": case.metric or None,
        "good": case.good_sha,
        "bad": case.bad_sha,
        "source": case.source,
        "state": case.state,
        "label": states.LABELS.get(case.state, case.state),
        "change": case.change,
        "number": case.number,
        "requested_by": case.requested_by,
        "run_url": case.run_url,
        "culprit": case.culprit_sha,
        "culprit_number": case.culprit_number,
        "culprit_subject": case.culprit_subject,
        "gpu_seconds": round(case.gpu_minutes * 60),
        "comment_url": case.comment_url,
        "issue_number": case.issue_number,
        "superseded_by": case.superseded_by,
        "note": case.note,
        "detected_at": _iso(case.detected_at),
        "updated_at": _iso(case.updated_at),
        "finished_at": _iso(case.finished_at),
    }


def listing(
    services: Services, visible: frozenset[str] | None, repo: str | None = None, sha: str | None = None
) -> Listing:
    """The cases shown: of ``repo`` and of commit ``sha`` (its bad point or its culprit) when given."""
    repos = visible if repo is None else frozenset({repo} & (visible if visible is not None else {repo}))
    found = services.store.watch.cases(repos, SHOWN)
    if sha:
        found = [c for c in found if sha in (c.bad_sha, c.culprit_sha, c.good_sha)]
    day = budget.day(services.now())
    spending = {name: services.store.watch.spending(name, day) for name in sorted({c.repo for c in found})}
    return Listing(found, spending, day)


def detail(services: Services, visible: frozenset[str] | None, key: str) -> CaseDetail | None:
    case = services.store.watch.get(key)
    if case is None or (visible is not None and case.repo not in visible):
        return None
    outcome = json.loads(case.outcome) if case.outcome else {}
    return CaseDetail(case, outcome, _fingerprints(services, case, outcome))


def _fingerprints(services: Services, case: RegressionCase, outcome: dict[str, Any]) -> list[FingerprintRow]:
    """Today's fingerprints (the bisect's reference run) beside the original run's, for a case
    that was not reproduced: the keys that differ between then and now first."""
    today = outcome.get("fingerprints") or {}
    if case.state not in (states.NOT_REPRODUCED, states.INCONCLUSIVE) or not today:
        return []
    original = _original(services, case)
    keys = sorted(
        {*today.get("good", {}), *today.get("bad", {}), *original.get("base", {}), *original.get("head", {})}
    )
    rows = [
        FingerprintRow(
            k,
            original.get("base", {}).get(k),
            today.get("good", {}).get(k),
            original.get("head", {}).get(k),
            today.get("bad", {}).get(k),
        )
        for k in keys
    ]
    return sorted(
        rows, key=lambda r: (r.original_good == r.today_good and r.original_bad == r.today_bad, r.key)
    )


def _original(services: Services, case: RegressionCase) -> dict[str, dict[str, str]]:
    """The fingerprints of the runs that found the regression: a merge run's of its span (its base
    and its head); for a change point of the history, the head of the run that measured the good
    commit and the head of the one that measured the bad commit; nothing where no run was stored."""
    request = services.store.benchmarks.get(
        contract.correlation_id(contract.work_key("merge", case.repo, case.bad_sha))
    )
    if request is not None and request.id is not None:
        for result in services.store.benchmarks.results(request.id):
            if result.suite == case.suite and result.base_sha == case.good_sha:
                return _prints(result)
    good = services.store.benchmarks.measured(case.repo, case.suite, case.good_sha)
    bad = services.store.benchmarks.measured(case.repo, case.suite, case.bad_sha)
    return {
        "base": _prints(good).get("head", {}) if good else {},
        "head": _prints(bad).get("head", {}) if bad else {},
    }


def _prints(result: BenchResult) -> dict[str, dict[str, str]]:
    try:
        found = json.loads(result.comparison).get("fingerprints")
    except (ValueError, AttributeError):
        return {}
    return found if isinstance(found, dict) else {}


def _iso(moment: Any) -> str | None:
    return None if moment is None else moment.isoformat()
