"""How well does the risk ranking find real performance regressions in vLLM's history?

The labelled set, `benchmarks/vllm_regressions.json`, holds vLLM commits that a fix, a revert or
an issue names as the cause of a performance regression, each with the evidence, and the range
it competes in: the 60 commits of main around it (30 before it, the culprit, 29 after), from a
day of merges (2026) to a month (2023). The script triages every range with perfbot and
reports, per culprit, its rank among the range's commits and the share of them it outscores,
then over the set:

- rank: 1 + the commits scoring higher + half the commits scoring the same (ties are neither
  won nor lost); other labelled culprits in a range are left out of its competitors;
- median rank, and how often the culprit is first, in the top 3 and in the top 10;
- AUC: the chance that the culprit outscores one of its range's other commits (ties count
  half), averaged over culprits, and pooled over all culprit/other pairs of the set.

    python benchmarks/validate_vllm.py --repo ~/src/vllm
    python benchmarks/validate_vllm.py --repo ~/src/vllm --show 3 --json out.json
    python benchmarks/validate_vllm.py --repo ~/src/vllm --config variant.yml  # rules adjusted
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from bot.adapters.git_repo import GitRepo
from bot.core.config import schema
from bot.core.config.schema import RepoConfig
from bot.core.risk import profiles, ruleset, triage

DATA = Path(__file__).with_name("vllm_regressions.json")


@dataclass
class Outcome:
    """One culprit in its range: its score and reasons, and how the other commits scored."""

    sha: str
    pr: int
    subject: str
    score: int
    reasons: list[str]
    others: list[int]

    @property
    def rank(self) -> float:
        higher = sum(1 for s in self.others if s > self.score)
        same = sum(1 for s in self.others if s == self.score)
        return 1 + higher + same / 2

    @property
    def auc(self) -> float:
        return _wins(self.score, self.others) / len(self.others)


def _wins(score: int, others: list[int]) -> float:
    return sum(1.0 if score > s else 0.5 if score == s else 0.0 for s in others)


def evaluate(repo_path: str, data: dict, config: RepoConfig | None = None) -> list[Outcome]:
    repo = GitRepo.open(repo_path)
    config = config or RepoConfig()
    culprits = {entry["culprit"]["sha"] for entry in data["regressions"]}
    outcomes = []
    for entry in data["regressions"]:
        culprit, span = entry["culprit"], entry["range"]
        base, head, count = repo.count_range(span["base"], span["head"])
        if count != span["commits"]:
            raise SystemExit(
                f"{culprit['sha'][:10]}: the range has {count} commits, "
                f"the data says {span['commits']}: is this the main history of the repository "
                f"the data names?"
            )
        rules = ruleset.build(config, repo.existing_paths(head, profiles.MARKERS))
        ranked = triage.rank(repo.range_patches(base, head), rules, f"{base}..{head}").commits
        found = [item for item in ranked if item.commit.sha == culprit["sha"]]
        if not found:
            raise SystemExit(f"{culprit['sha'][:10]} is not in its range {base[:10]}..{head[:10]}")
        report = found[0].report
        others = [item.report.score for item in ranked if item.commit.sha not in culprits]
        outcomes.append(
            Outcome(culprit["sha"], culprit["pr"], culprit["subject"], report.score, report.reasons, others)
        )
    return outcomes


def summary(outcomes: list[Outcome]) -> dict:
    ranks = [o.rank for o in outcomes]
    pairs = sum(len(o.others) for o in outcomes)
    return {
        "culprits": len(outcomes),
        "median_rank": statistics.median(ranks),
        "top1": sum(r <= 1 for r in ranks) / len(ranks),
        "top3": sum(r <= 3 for r in ranks) / len(ranks),
        "top10": sum(r <= 10 for r in ranks) / len(ranks),
        "mean_auc": statistics.fmean(o.auc for o in outcomes),
        "pooled_auc": _pooled_auc(outcomes) if pairs else None,
        "median_culprit_score": statistics.median(o.score for o in outcomes),
        "median_other_score": statistics.median(s for o in outcomes for s in o.others),
    }


def _pooled_auc(outcomes: list[Outcome]) -> float:
    """Every culprit against every non-culprit commit of the set, not only its own range."""
    others = [s for o in outcomes for s in o.others]
    return statistics.fmean(_wins(o.score, others) / len(others) for o in outcomes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="a clone of vLLM with its main history")
    parser.add_argument("--data", default=str(DATA), help="the labelled set (JSON)")
    parser.add_argument("--show", type=int, default=0, help="reasons to print per culprit")
    parser.add_argument("--json", dest="json_out", help="also write the figures to this file")
    parser.add_argument("--config", help="a perfbot.yml whose risk section adjusts the rules")
    args = parser.parse_args()

    data = json.loads(Path(args.data).read_text())
    config = schema.load(Path(args.config).read_text(), args.config) if args.config else None
    outcomes = evaluate(args.repo, data, config)
    print(f"{'culprit':<10} {'PR':>6} {'score':>5} {'rank':>5} {'of':>3} {'AUC':>5}  subject")
    for o in outcomes:
        print(
            f"{o.sha[:10]} {o.pr:>6} {o.score:>5} {o.rank:>5g} {len(o.others) + 1:>3} "
            f"{o.auc:>5.2f}  {o.subject[:60]}"
        )
        for reason in o.reasons[: args.show]:
            print(f"{'':>17}- {reason[:150]}")
    figures = summary(outcomes)
    print(
        f"\n{figures['culprits']} culprits: median rank {figures['median_rank']:g}, "
        f"top-1 {figures['top1']:.0%}, top-3 {figures['top3']:.0%}, "
        f"top-10 {figures['top10']:.0%}; AUC {figures['mean_auc']:.2f} (mean per range), "
        f"{figures['pooled_auc']:.2f} (pooled); median score: culprits "
        f"{figures['median_culprit_score']:g}, other commits {figures['median_other_score']:g}"
    )
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {
                    "summary": figures,
                    "culprits": [
                        {
                            "sha": o.sha,
                            "pr": o.pr,
                            "score": o.score,
                            "rank": o.rank,
                            "of": len(o.others) + 1,
                            "auc": o.auc,
                        }
                        for o in outcomes
                    ],
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
