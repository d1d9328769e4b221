"""The risk gate as an operating point: which share of known culprits reaches each trigger level,
against the share of all commits that does.

Each labelled set (`sglang_regressions.json`, the tuning set; `sglang_heldout.json`, mined by
`mine_regressions.py` and never tuned on; `vllm_regressions.json` with ``--vllm-repo``) is scored
against a window of the repository's latest commits (``--window``, default 5,000, first-parent
history), and the script reports:

- per trigger level (`low`, `medium`, `high` at the thresholds in force) and per score threshold
  (the curve): the share of each set's culprits that reaches it, and the share of the window's
  commits that does (what a gate at that level would benchmark);
- binary ROC-AUC: the chance that a culprit outscores a commit of the window (ties half), with a
  bootstrap interval (culprits and window commits resampled, percentiles 2.5 and 97.5);
- mean reciprocal rank within ranges: each culprit among the commits around it (its set's
  `range`), averaged over a random order of the commits it ties with, and as `perfbot triage`
  orders them (ties broken deterministically);
- the operating point: the lowest level that catches >= ``--recall`` of the held-out culprits
  while flagging <= ``--flagged`` of the window, if there is one.

    python benchmarks/operating_point.py --repo ~/src/sglang --window 5000 --json op.json
    python benchmarks/operating_point.py --repo ~/src/sglang --window 200   # measure the rate first
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bot.adapters.git_repo import GitRepo
from bot.core.config import schema
from bot.core.config.schema import RepoConfig
from bot.core.risk import profiles, ruleset, triage

HERE = Path(__file__).parent
LEVELS = ("low", "medium", "high")
GRID = (1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 60, 70, 80, 90)  # thresholds the curve prints


@dataclass
class Culprit:
    """A labelled culprit: its own score, and the scores of its range in triage order."""

    sha: str
    subject: str
    score: int
    range_scores: list[int] = field(default_factory=list)  # the other commits of its range
    position: int = 0  # 1-based place in `perfbot triage`'s order of its range

    @property
    def higher(self) -> int:
        return sum(1 for s in self.range_scores if s > self.score)

    @property
    def same(self) -> int:
        return sum(1 for s in self.range_scores if s == self.score)

    @property
    def reciprocal_rank(self) -> float:
        """1/rank averaged over every order of the commits that tie with the culprit."""
        return sum(1 / (1 + self.higher + k) for k in range(self.same + 1)) / (self.same + 1)


def auc(positives: list[int], negatives: list[int]) -> float:
    """The chance that a positive outscores a negative, ties counted half (Mann-Whitney)."""
    if not positives or not negatives:
        raise ValueError("AUC needs at least one positive and one negative")
    ordered = sorted(negatives)
    wins = 0.0
    for score in positives:
        below = bisect.bisect_left(ordered, score)
        ties = bisect.bisect_right(ordered, score) - below
        wins += below + ties / 2
    return wins / (len(positives) * len(negatives))


def bootstrap_auc(
    positives: list[int], negatives: list[int], rounds: int, seed: int = 0
) -> tuple[float, float]:
    """A 95% percentile interval of the AUC, both samples drawn again with replacement."""
    rng = random.Random(seed)
    values = sorted(
        auc(rng.choices(positives, k=len(positives)), rng.choices(negatives, k=len(negatives)))
        for _ in range(rounds)
    )
    return values[int(0.025 * (rounds - 1))], values[int(0.975 * (rounds - 1))]


def share_at(scores: list[int], threshold: int) -> float:
    return sum(1 for s in scores if s >= threshold) / len(scores) if scores else 0.0


def curve(window: list[int], sets: dict[str, list[int]]) -> list[dict]:
    """At every score a commit or culprit has, the share of each that reaches it."""
    points = sorted({0, *window, *(s for scores in sets.values() for s in scores)})
    return [
        {
            "threshold": t,
            "flagged": share_at(window, t),
            **{name: share_at(scores, t) for name, scores in sets.items()},
        }
        for t in points
    ]


def operating_point(
    thresholds: dict[str, int], window: list[int], culprits: list[int], recall: float, flagged: float
) -> str | None:
    """The most selective level that still catches ``recall`` of ``culprits`` flagging at most
    ``flagged`` of the window; None when no level meets both."""
    met = [
        level
        for level in LEVELS
        if share_at(culprits, thresholds[level]) >= recall and share_at(window, thresholds[level]) <= flagged
    ]
    return met[-1] if met else None


def score_window(repo: GitRepo, rules: ruleset.RuleSet, count: int) -> tuple[list[str], list[int], float]:
    head = repo.resolve("HEAD")
    base = repo.resolve(f"HEAD~{count}")
    started = time.perf_counter()
    ranked = triage.rank(repo.range_patches(base, head), rules, f"{base}..{head}")
    seconds = time.perf_counter() - started
    return (
        [item.commit.sha for item in ranked.commits],
        [item.report.score for item in ranked.commits],
        seconds,
    )


def score_set(repo: GitRepo, rules: ruleset.RuleSet, data: dict) -> list[Culprit]:
    labelled = {entry["culprit"]["sha"] for entry in data["regressions"]}
    found = []
    for entry in data["regressions"]:
        sha, span = entry["culprit"]["sha"], entry["range"]
        ranked = triage.rank(
            repo.range_patches(span["base"], span["head"]), rules, f"{span['base']}..{span['head']}"
        ).commits
        order = [item for item in ranked if item.commit.sha == sha or item.commit.sha not in labelled]
        place = next((i for i, item in enumerate(order) if item.commit.sha == sha), None)
        if place is None:
            raise SystemExit(f"{sha[:10]} is not in its range {span['base'][:10]}..{span['head'][:10]}")
        found.append(
            Culprit(
                sha,
                entry["culprit"]["subject"],
                order[place].report.score,
                [item.report.score for item in order if item.commit.sha != sha],
                place + 1,
            )
        )
    return found


def report(
    window_scores: list[int],
    sets: dict[str, list[Culprit]],
    thresholds: dict[str, int],
    rounds: int,
    heldout: str | None,
    recall: float,
    flagged: float,
) -> dict:
    culprit_shas = {c.sha for found in sets.values() for c in found}
    negatives = window_scores
    figures: dict = {"window": len(window_scores), "thresholds": thresholds, "levels": {}, "sets": {}}
    for level in LEVELS:
        figures["levels"][level] = {
            "flagged": share_at(window_scores, thresholds[level]),
            **{name: share_at([c.score for c in found], thresholds[level]) for name, found in sets.items()},
        }
    for name, found in sets.items():
        positives = [c.score for c in found]
        low, high = bootstrap_auc(positives, negatives, rounds)
        figures["sets"][name] = {
            "culprits": len(found),
            "auc": auc(positives, negatives),
            "auc_95": [low, high],
            "mrr": sum(c.reciprocal_rank for c in found) / len(found),
            "mrr_triage_order": sum(1 / c.position for c in found) / len(found),
            "scores": [
                {
                    "sha": c.sha,
                    "subject": c.subject,
                    "score": c.score,
                    "rank": 1 + c.higher + c.same / 2,
                    "position": c.position,
                    "of": len(c.range_scores) + 1,
                }
                for c in found
            ],
        }
    figures["curve"] = curve(window_scores, {n: [c.score for c in f] for n, f in sets.items()})
    figures["culprits_in_window"] = len(culprit_shas)
    if heldout:
        figures["operating_point"] = operating_point(
            thresholds, window_scores, [c.score for c in sets[heldout]], recall, flagged
        )
        figures["trade"] = trade(figures["curve"], heldout, recall, flagged)
    return figures


def trade(points: list[dict], name: str, recall: float, flagged: float) -> dict:
    """Along the curve: the highest threshold that still catches ``recall`` of set ``name`` (and
    what it flags), and the lowest that flags at most ``flagged`` (and what it catches)."""
    catching = [p for p in points if p[name] >= recall]
    quiet = [p for p in points if p["flagged"] <= flagged]
    return {"at_recall": catching[-1] if catching else None, "at_flagged": quiet[0] if quiet else None}


def render(figures: dict) -> str:
    names = list(figures["sets"])
    lines = [
        f"window: {figures['window']} commits; thresholds {figures['thresholds']}",
        "",
        f"{'level':<8} {'flagged':>8} " + " ".join(f"{n:>10}" for n in names),
    ]
    for level, row in figures["levels"].items():
        lines.append(f"{level:<8} {row['flagged']:>8.1%} " + " ".join(f"{row[n]:>10.1%}" for n in names))
    lines.append("")
    for name, s in figures["sets"].items():
        lines.append(
            f"{name}: {s['culprits']} culprits, ROC-AUC {s['auc']:.3f} "
            f"(95% {s['auc_95'][0]:.3f}-{s['auc_95'][1]:.3f}), MRR {s['mrr']:.3f} "
            f"(triage order {s['mrr_triage_order']:.3f})"
        )
    lines += ["", f"{'score >=':<8} {'flagged':>8} " + " ".join(f"{n:>10}" for n in names)]
    for threshold in GRID:
        point = next((p for p in figures["curve"] if p["threshold"] >= threshold), None)
        values = point or {"flagged": 0.0, **dict.fromkeys(names, 0.0)}
        lines.append(
            f"{threshold:<8} {values['flagged']:>8.1%} " + " ".join(f"{values[n]:>10.1%}" for n in names)
        )
    if "operating_point" in figures:
        lines.append(f"operating point: {figures['operating_point'] or 'no level meets both'}")
        for key, label in (("at_recall", "catching the recall"), ("at_flagged", "flagging the most")):
            point = figures["trade"][key]
            if point:
                lines.append(
                    f"{label}: score >= {point['threshold']} flags {point['flagged']:.1%}, "
                    f"catches " + ", ".join(f"{n} {point[n]:.1%}" for n in names)
                )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="a clone of SGLang with its main history")
    parser.add_argument("--window", type=int, default=5000, help="latest commits to score")
    parser.add_argument("--tuning", default=str(HERE / "sglang_regressions.json"))
    parser.add_argument("--heldout", default=str(HERE / "sglang_heldout.json"))
    parser.add_argument("--vllm-repo", help="a clone of vLLM: also score vllm_regressions.json")
    parser.add_argument("--vllm", default=str(HERE / "vllm_regressions.json"))
    parser.add_argument("--config", help="a perfbot.yml whose risk section adjusts the rules")
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap rounds")
    parser.add_argument("--recall", type=float, default=0.90)
    parser.add_argument("--flagged", type=float, default=0.15)
    parser.add_argument("--json", dest="json_out", help="also write the figures here")
    args = parser.parse_args()

    config = schema.load(Path(args.config).read_text(), args.config) if args.config else RepoConfig()
    repo = GitRepo.open(args.repo)
    rules = ruleset.build(config, repo.existing_paths(repo.resolve("HEAD"), profiles.MARKERS))
    shas, window_scores, seconds = score_window(repo, rules, args.window)
    print(
        f"scored {len(shas)} commits in {seconds:.0f} s ({len(shas) / seconds:.1f} per second)",
        file=sys.stderr,
    )
    sets = {
        "tuning": score_set(repo, rules, json.loads(Path(args.tuning).read_text())),
        "heldout": score_set(repo, rules, json.loads(Path(args.heldout).read_text())),
    }
    if args.vllm_repo:
        vllm = GitRepo.open(args.vllm_repo)
        vllm_rules = ruleset.build(config, vllm.existing_paths(vllm.resolve("HEAD"), profiles.MARKERS))
        sets["vllm"] = score_set(vllm, vllm_rules, json.loads(Path(args.vllm).read_text()))
    thresholds = config.risk.thresholds.model_dump()
    figures = report(window_scores, sets, thresholds, args.bootstrap, "heldout", args.recall, args.flagged)
    figures["seconds"] = round(seconds, 1)
    print(render(figures))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
