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
  while flagging <= ``--flagged`` of the window, if there is one;
- with maps: an entry of a set may name a per-step map of its range (``"map": FILE``, a map file
  as `perfbot map` or a profiled pass writes it, relative to the set's file; its commit one the
  repository has, normally the range's base: what the App would have stored from main). Its range
  is then scored twice, as the gate scores a pull request without a map and with it (the call
  graph read at the map's commit), and the report adds, over the mapped ranges of each set: per
  level, the share of culprits and the share of the ranges' other commits that reach it, without
  and with the maps, each with a 95% Wilson interval, and the MRR both ways. The window has no map
  (a map judges the code of its own commit's neighbourhood), so the mapped figures are read
  against the ranges' own commits.

    python benchmarks/operating_point.py --repo ~/src/sglang --window 5000 --json op.json
    python benchmarks/operating_point.py --repo ~/src/sglang --window 200   # measure the rate first
    python benchmarks/operating_point.py --repo ~/src/sglang --heldout mapped.json  # entries with "map"
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

from scipy.stats import binomtest

from bot.adapters.git_repo import GitRepo, RepoError
from bot.core import stepmap
from bot.core.config import schema
from bot.core.config.schema import RepoConfig
from bot.core.risk import diff as diffs
from bot.core.risk import profiles, ruleset, stepmap_scoring, triage
from bot.core.risk.stepmap_scoring import MapEvidence

HERE = Path(__file__).parent
LEVELS = ("low", "medium", "high")
GRID = (1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 60, 70, 80, 90)  # thresholds the curve prints
MAP_SOURCES = 500  # files the call graph reads at a map's commit (as `perfbot score --map`)


@dataclass
class Culprit:
    """A labelled culprit: its own score, and the scores of its range in triage order."""

    sha: str
    subject: str
    score: int
    range_scores: list[int] = field(default_factory=list)  # the other commits of its range
    position: int = 0  # 1-based place in `perfbot triage`'s order of its range
    mapped: Culprit | None = None  # the same, its range scored with the entry's map
    range_shas: list[str] = field(default_factory=list)  # of `range_scores`, in the same order

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


def score_set(repo: GitRepo, rules: ruleset.RuleSet, data: dict, where: Path | None = None) -> list[Culprit]:
    """Each entry's culprit among its range; an entry with a ``map`` (a file relative to ``where``,
    the set's folder) is scored with it too (`Culprit.mapped`)."""
    labelled = {entry["culprit"]["sha"] for entry in data["regressions"]}
    found = []
    for entry in data["regressions"]:
        span = entry["range"]
        commits = list(repo.range_patches(span["base"], span["head"]))
        culprit = place(commits, rules, entry, labelled)
        if entry.get("map") is not None:
            # The files the range changes come first in the call graph, as a review reads them.
            changed = [f.path for commit in commits for f in diffs.parse(commit.diff).files]
            evidence = map_evidence(repo, (where or Path()) / entry["map"], changed)
            culprit.mapped = place(commits, rules, entry, labelled, evidence)
        found.append(culprit)
    return found


def place(
    commits: list[triage.Commit],
    rules: ruleset.RuleSet,
    entry: dict,
    labelled: set[str],
    evidence: MapEvidence | None = None,
) -> Culprit:
    """The entry's culprit, scored among ``commits`` (its range) as `perfbot triage` scores them
    (with ``evidence``: the map's), the other labelled culprits of the range left out."""
    sha, span = entry["culprit"]["sha"], entry["range"]
    ranked = triage.rank(commits, rules, f"{span['base']}..{span['head']}", None, evidence).commits
    order = [item for item in ranked if item.commit.sha == sha or item.commit.sha not in labelled]
    at = next((i for i, item in enumerate(order) if item.commit.sha == sha), None)
    if at is None:
        raise SystemExit(f"{sha[:10]} is not in its range {span['base'][:10]}..{span['head'][:10]}")
    others = [item for item in order if item.commit.sha != sha]
    return Culprit(
        sha,
        entry["culprit"]["subject"],
        order[at].report.score,
        [item.report.score for item in others],
        at + 1,
        range_shas=[item.commit.sha for item in others],
    )


def map_evidence(repo: GitRepo, path: Path, changed: list[str]) -> MapEvidence:
    """The map in ``path`` with the call graph of its commit's source in ``repo`` (``changed``
    files first)."""
    try:
        mapped = stepmap.parse(json.loads(path.read_text()))
    except (OSError, ValueError) as error:  # JSONDecodeError and StepMapError are ValueErrors
        raise SystemExit(f"{path}: not a map file ({error})") from None
    try:
        commit = repo.resolve(mapped.commit)
    except RepoError:
        raise SystemExit(f"{path}: the repository has no commit {mapped.commit[:12]}, the map's") from None
    return stepmap_scoring.evidence(mapped, lambda name: repo.show(commit, name), changed, None, MAP_SOURCES)


def wilson(hits: int, total: int) -> tuple[float, float]:
    """A 95% Wilson interval of the share ``hits`` of ``total``."""
    found = binomtest(hits, total).proportion_ci(confidence_level=0.95, method="wilson")
    return found.low, found.high


def share_with_interval(scores: list[int], threshold: int) -> dict:
    hits = sum(1 for s in scores if s >= threshold)
    low, high = wilson(hits, len(scores)) if scores else (0.0, 1.0)
    return {
        "share": hits / len(scores) if scores else 0.0,
        "hits": hits,
        "of": len(scores),
        "95": [low, high],
    }


def others(culprits: list[Culprit]) -> list[int]:
    """The scores of the commits of the culprits' ranges that are no culprit, each commit once
    (ranges overlap)."""
    found: dict[str, int] = {}
    for culprit in culprits:
        for sha, score in zip(culprit.range_shas, culprit.range_scores, strict=True):
            found.setdefault(sha, score)
    return list(found.values())


def map_report(found: list[Culprit], thresholds: dict[str, int]) -> dict | None:
    """Over the culprits scored with a map: per level, the share of them and of their ranges' other
    commits that reach it, without the maps and with them; None when no culprit has a map."""
    mapped = [c for c in found if c.mapped is not None]
    if not mapped:
        return None
    sides = {"without": mapped, "with": [c.mapped for c in mapped if c.mapped is not None]}
    return {
        "culprits": len(mapped),
        "range_commits": len(others(mapped)),
        "levels": {
            level: {
                side: {
                    "culprits": share_with_interval([c.score for c in culprits], thresholds[level]),
                    "others": share_with_interval(others(culprits), thresholds[level]),
                }
                for side, culprits in sides.items()
            }
            for level in LEVELS
        },
        "mrr": {
            side: sum(c.reciprocal_rank for c in culprits) / len(culprits) for side, culprits in sides.items()
        },
        "scores": [
            {"sha": c.sha, "subject": c.subject, "without": c.score, "with": c.mapped.score}
            for c in mapped
            if c.mapped is not None
        ],
    }


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
    with_maps = {name: map_report(found, thresholds) for name, found in sets.items()}
    figures["maps"] = {name: value for name, value in with_maps.items() if value is not None}
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
    lines += render_maps(figures.get("maps", {}))
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


def render_maps(maps: dict) -> list[str]:
    """The with-maps section of `render`: per set whose entries name maps, per level, the shares
    of culprits and of their ranges' other commits without and with the maps, 95% intervals."""
    columns = [(who, side) for who in ("culprits", "others") for side in ("without", "with")]
    lines: list[str] = []
    for name, figures in maps.items():
        lines += [
            "",
            f"{name} with maps: {figures['culprits']} culprits in mapped ranges, "
            f"{figures['range_commits']} other commits in those ranges; MRR "
            f"{figures['mrr']['without']:.3f} without the maps, {figures['mrr']['with']:.3f} with them",
            f"{'level':<8} " + " ".join(f"{who + ' ' + side:>22}" for who, side in columns),
        ]
        for level, row in figures["levels"].items():
            lines.append(f"{level:<8} " + " ".join(f"{_share(row[side][who]):>22}" for who, side in columns))
    return lines


def _share(cell: dict) -> str:
    low, high = cell["95"]
    return f"{cell['hits']}/{cell['of']} {cell['share']:.0%} [{low:.0%}, {high:.0%}]"


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
        "tuning": score_set(repo, rules, json.loads(Path(args.tuning).read_text()), Path(args.tuning).parent),
        "heldout": score_set(
            repo, rules, json.loads(Path(args.heldout).read_text()), Path(args.heldout).parent
        ),
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
