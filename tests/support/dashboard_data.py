"""Dashboard data for the browser tests and the dashboard benchmark: several repositories (one
private), thousands of merges with risk reasons, benchmark results on pull requests and merge
commits, acknowledgements and triage, and default-branch metric histories with planted change
points, each caused by a known merge. Rows go straight into the tables, as the bot's writers
leave them; the dashboard derives the rest on its first read.

    fill(engine)                                        # the browser tests' data set
    fill(engine, repos=4, merges_per_repo=6_000, ...)   # the benchmark's
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, insert

from bot.adapters.store.tables import (
    AckRow,
    Base,
    BenchResultRow,
    MergeRow,
    MetricPointRow,
    RepositoryRow,
    TriageEventRow,
)

REPOS = ("sgl-project/sglang", "vllm-project/vllm", "acme/inference-engine", "acme/private-engine")
PRIVATE = "acme/private-engine"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
HOSTILE_TITLE = '<script>alert("x")</script> Fix @octocat\'s <b>bold</b> allreduce'
RULES = (
    ("path.pynccl", 40, "NCCL communicator wrapper"),
    ("path.custom-allreduce", 40, "custom allreduce"),
    ("path.parallel-state", 40, "parallel state (process groups)"),
    ("path.cuda-graph", 35, "CUDA graph capture/replay"),
    ("path.speculative", 30, "speculative decoding / EAGLE"),
    ("path.attention", 30, "attention backend"),
    ("path.moe", 30, "MoE kernels and routing"),
    ("function.collective", 25, "a collective operation"),
    ("token.host-sync", 15, "host-device synchronisation (stalls the GPU queue)"),
    ("path.scheduler", 12, "scheduler (warm path)"),
    ("size", 6, "size: 120 changed lines in 3 non-cold files"),
)
FILES = (
    "python/sglang/srt/distributed/device_communicators/pynccl.py",
    "python/sglang/srt/distributed/parallel_state.py",
    "python/sglang/srt/model_executor/cuda_graph_runner.py",
    "python/sglang/srt/speculative/eagle_worker.py",
    "python/sglang/srt/layers/attention/flashinfer_backend.py",
    "python/sglang/srt/managers/scheduler.py",
)
TITLES = (
    "Fix PCG MoE error",
    "Refactor {area} for clarity",
    "Speed up {area}",
    "Support {area} on Blackwell",
    "Bump flashinfer",
    "Tidy {area} imports",
    "Cache {area} handles",
    "Add metrics to {area}",
)
AREAS = (
    "allreduce",
    "EAGLE verify",
    "CUDA graph capture",
    "MoE routing",
    "attention backend",
    "scheduler",
    "KV cache",
    "sampling",
)
AUTHORS = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi")
SERIES = (
    ("verify-step", "step_ms", "ms", "lower", 19.0),
    ("decode", "throughput", "tok/s", "higher", 2400.0),
)


@dataclass
class Planted:
    """A change planted in a series: merge ``number`` moved its level by ``change`` (relative),
    for the worse ('regression') or the better ('improvement')."""

    repo: str
    suite: str
    metric: str
    number: int
    change: float
    direction: str


@dataclass
class Summary:
    merges: int = 0
    flagged_by_risk: int = 0
    results: int = 0
    points: int = 0
    planted: list[Planted] = field(default_factory=list)
    hostile: tuple[str, int] | None = None  # a public merge whose title is an attack


def fill(
    engine: Engine,
    *,
    repos: int = 3,
    merges_per_repo: int = 1_000,
    results_per_merge: float = 1.0,
    points_per_merge: int = 1,
    seed: int = 12,
    private: bool = True,
) -> Summary:
    """Insert the data set; ``repos`` public repositories, and the private one when ``private``."""
    rng = random.Random(seed)
    names = list(REPOS[:repos]) + ([PRIVATE] if private else [])
    summary = Summary()
    with engine.begin() as connection:
        connection.execute(
            insert(_table(RepositoryRow)),
            [
                {
                    "id": 100 + i,
                    "full_name": name,
                    "installation_id": 1,
                    "private": name == PRIVATE,
                    "updated_at": START,
                }
                for i, name in enumerate(names)
            ],
        )
        for name in names:
            _fill_repo(connection, rng, name, merges_per_repo, results_per_merge, points_per_merge, summary)
    return summary


def _fill_repo(
    connection,
    rng: random.Random,
    repo: str,
    count: int,
    results_per_merge: float,
    points_per_merge: int,
    summary: Summary,
) -> None:
    merges, results, acks, triage, points = [], [], [], [], []
    steps = [count // 3, 2 * count // 3]  # planted regressions and their fixes
    levels: dict[str, float] = {f"{suite}/{metric}": base for suite, metric, _, _, base in SERIES}
    at = START
    for i in range(count):
        number = 1000 + i
        at += timedelta(minutes=rng.randint(20, 160))
        planted = i in steps
        score = rng.choice((92, 88, 75)) if planted else _score(rng)
        level = _level(score)
        reasons = _reasons(rng, score)
        title = HOSTILE_TITLE if i == 5 else rng.choice(TITLES).format(area=rng.choice(AREAS))
        if i == 5 and summary.hostile is None:
            summary.hostile = (repo, number)
        head, merge_sha = _sha(rng), _sha(rng)
        merges.append(
            {
                "repo": repo,
                "number": number,
                "title": title,
                "merge_sha": merge_sha,
                "head_sha": head,
                "score": score,
                "level": level,
                "merged_at": at,
                "flagged": level in ("medium", "high"),
                "author": rng.choice(AUTHORS),
                "url": f"https://github.com/{repo}/pull/{number}",
                "top_reason": reasons[0]["reason"] if reasons else None,
                "reasons": json.dumps(reasons),
                "acked": False,
            }
        )
        summary.merges += 1
        summary.flagged_by_risk += level in ("medium", "high")
        verdict = None
        for suite, metric, unit, better, _ in SERIES:
            key = f"{suite}/{metric}"
            if planted:
                harm = 0.5 if i == steps[0] else -0.3  # how much slower: the regression, then its fix
                change = harm if better == "lower" else -harm
                levels[key] *= 1 + change
                direction = "regression" if harm > 0 else "improvement"
                summary.planted.append(Planted(repo, suite, metric, number, change, direction))
            for k in range(points_per_merge):
                value = levels[key] * (1 + rng.gauss(0, 0.015))
                points.append(
                    {
                        "repo": repo,
                        "suite": suite,
                        "metric": metric,
                        "unit": unit,
                        "better": better,
                        "sha": merge_sha if k == 0 else _sha(rng),
                        "value": value,
                        "measured_at": at + timedelta(minutes=10 + k),
                    }
                )
        measured = planted or (level in ("medium", "high") and rng.random() < 0.7) or rng.random() < 0.1
        if measured:
            for _ in range(max(1, round(results_per_merge * rng.uniform(0.5, 1.5)))):
                verdict = (
                    ("regression" if i == steps[0] else "improvement") if planted else _verdict(rng, score)
                )
                results.append(_result(rng, repo, number, head, verdict, at - timedelta(hours=1)))
        if verdict == "regression" and rng.random() < 0.5:
            acks.append(
                {
                    "repo": repo,
                    "number": number,
                    "head_sha": head,
                    "user": rng.choice(AUTHORS),
                    "reason": "expected: trades latency for accuracy",
                    "comment_id": None,
                    "created_at": at + timedelta(hours=2),
                }
            )
        if level == "high" and rng.random() < 0.3:
            state = rng.choice(("confirmed", "false_alarm", "reverted", "fixed"))
            triage.append(
                {
                    "repo": repo,
                    "number": number,
                    "state": state,
                    "fixed_by": number + 7 if state == "fixed" else None,
                    "note": "seen on the nightly",
                    "user": rng.choice(AUTHORS),
                    "created_at": at + timedelta(hours=3),
                }
            )
    connection.execute(insert(_table(MergeRow)), merges)
    for row in triage:  # the merge carries its latest triage state
        connection.execute(
            _table(MergeRow)
            .update()
            .where(_table(MergeRow).c.repo == row["repo"], _table(MergeRow).c.number == row["number"])
            .values(triage_state=row["state"], fixed_by=row["fixed_by"])
        )
    if triage:
        connection.execute(insert(_table(TriageEventRow)), triage)
    if results:
        connection.execute(insert(_table(BenchResultRow)), results)
    if acks:
        connection.execute(insert(_table(AckRow)), acks)
    connection.execute(insert(_table(MetricPointRow)), points)
    summary.results += len(results)
    summary.points += len(points)


def _score(rng: random.Random) -> int:
    return min(100, int(rng.expovariate(1 / 22)))


def _level(score: int) -> str:
    return "high" if score >= 60 else "medium" if score >= 30 else "low" if score >= 1 else "none"


def _reasons(rng: random.Random, score: int) -> list[dict]:
    if score == 0:
        return []
    picked = sorted(rng.sample(RULES, k=min(len(RULES), 1 + score // 25)), key=lambda r: -r[1])
    reasons = []
    for rule, weight, description in picked:
        where = f"{rng.choice(FILES)}:{rng.randint(10, 900)}"
        reasons.append(
            {"rule": rule, "weight": weight, "reason": f"{description} [{rule}, +{weight}] at {where}"}
        )
    return reasons


def _verdict(rng: random.Random, score: int) -> str:
    regress = 0.05 + score / 250  # riskier merges regress more often: calibration has something to find
    roll = rng.random()
    if roll < regress:
        return "regression"
    return rng.choices(("unchanged", "improvement", "inconclusive", "error"), (70, 12, 12, 6))[0]


def _result(rng: random.Random, repo: str, number: int, head: str, verdict: str, at: datetime) -> dict:
    change = {"regression": rng.uniform(0.03, 0.6), "improvement": -rng.uniform(0.03, 0.3)}.get(
        verdict, rng.uniform(-0.015, 0.015)
    )
    base = 19.0 * rng.uniform(0.9, 1.1)
    comparison = {
        "verdict": verdict,
        "rounds": {"base": 5, "head": 5},
        "metrics": [
            {
                "name": "step_ms",
                "unit": "ms",
                "better": "lower",
                "base_median": base,
                "head_median": base * (1 + change),
                "ratio": 1 + change,
                "ci": [1 + change - 0.01, 1 + change + 0.01],
                "p_value": 0.004 if verdict != "unchanged" else 0.6,
                "verdict": verdict,
                "reason": "median moved beyond the minimum effect",
            }
        ],
        "environment_diff": (
            [
                {
                    "key": "packages.torch",
                    "base": "2.9.0",
                    "head": "2.9.1",
                    "category": "torch and kernel libraries",
                    "material": True,
                }
            ]
            if rng.random() < 0.2
            else []
        ),
        "notes": [],
        "warnings": [],
        "charts": [_rounds(base, change, verdict)],
    }
    return {
        "request_id": None,
        "repo": repo,
        "number": number,
        "suite": "verify-step",
        "base_sha": _sha(rng),
        "head_sha": head,
        "verdict": verdict,
        "headline_metric": "step_ms",
        "headline_change": change,
        "comparison": json.dumps(comparison),
        "on_default_branch": False,
        "created_at": at,
    }


def _rounds(base: float, change: float, verdict: str) -> dict:
    """The comparison's per-round chart (`bot.core.render.chart`): five ABBA pairs around the medians,
    from a generator of its own (the data set's other draws stay what they were)."""
    rng, pairs = random.Random(round(base * 1e6)), 5
    return {
        "metric": "step_ms",
        "unit": "ms",
        "better": "lower",
        "verdict": verdict,
        "change": change,
        "labels": [f"{k + 1} {'BH' if k % 2 == 0 else 'HB'}" for k in range(pairs)],
        "base": [round(base * rng.uniform(0.99, 1.01), 3) for _ in range(pairs)],
        "head": [round(base * (1 + change) * rng.uniform(0.99, 1.01), 3) for _ in range(pairs)],
        "base_first": [k % 2 == 0 for k in range(pairs)],
        "pairs": pairs,
    }


def _sha(rng: random.Random) -> str:
    return f"{rng.getrandbits(160):040x}"


def _table(row: type[Base]):
    return Base.metadata.tables[row.__tablename__]
