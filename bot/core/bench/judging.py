"""Judge the results files of a finished run: validate each, check that it measured what was asked
for, compare base and head (`stats.decide`) and render the comparison (`render.compare`) once, for
the sticky comment, the check run and the store alike. `perfbot bench report` judges a results
folder on the runner with the same `judge_suite`."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.core.bench.artifact import Artifact
from bot.core.judge import envdiff, profile, stats
from bot.core.judge import results as results_file
from bot.core.render import chart as render_chart
from bot.core.render import compare as render_compare
from bot.core.render.kernels import ChangedLines
from bot.core.text import clip, printable

# What `perfbot bench run --out` names its files: results.json, or results.SUITE.json for several.
_RESULTS_NAME = re.compile(r"results(?:\.([A-Za-z0-9._-]{1,64}))?\.json")


@dataclass(frozen=True)
class SuiteJudgement:
    """One suite's comparison: the verdict, its one-line headline and the rendered report."""

    suite: str
    verdict: str
    headline: str
    markdown: str
    headline_metric: str | None
    headline_change: float | None
    comparison: dict[str, Any]
    # per metric: (name, unit, better, head median), the history points of a default-branch run
    points: tuple[tuple[str, str, str, float], ...] = ()
    launching_lines: bool = False  # its kernel diff names the lines that launched a kernel

    def to_json(self) -> str:
        """What the store keeps: the JSON of `perfbot compare` plus the rendered report."""
        return json.dumps({"headline": self.headline, **self.comparison, "markdown": self.markdown})


@dataclass(frozen=True)
class Judged:
    """The judged suites; what kept files from being judged; and what the runs themselves say went
    wrong (the run's error, failed rounds), which explains a failed run."""

    suites: tuple[SuiteJudgement, ...]
    problems: tuple[str, ...]
    run_errors: tuple[str, ...] = ()

    def names_launching_lines(self) -> bool:
        """Whether a kernel diff names the lines that launched a kernel: only then can the lines a
        pull request changed be marked, and only then are they worth reading."""
        return any(suite.launching_lines for suite in self.suites)


def judge(
    artifact: Artifact,
    base_sha: str,
    head_sha: str,
    suites: Sequence[str],
    subject: str = "This PR",
    changed: ChangedLines | None = None,
) -> Judged:
    """Every results file of the artifact that measured ``base_sha`` against ``head_sha``; a file
    that is invalid, measured other commits or a suite that was not asked for is a problem, never a
    verdict. ``subject`` names what changed in the headlines ("This PR", "This commit");
    ``changed``: the lines it touched, marked where they launched a kernel that changed."""
    judged: list[SuiteJudgement] = []
    problems = [f"skipped {line}" for line in artifact.skipped]
    run_errors: list[str] = []
    for name in sorted(artifact.files):
        if not is_results_file(name):
            continue  # summary.md and other files the runner may add: the bot renders its own
        try:
            loaded = results_file.load(artifact.files[name], name)
        except results_file.ResultsError as error:
            problems.append(str(error))
            continue
        mismatch = _mismatch(loaded, base_sha, head_sha, suites, name)
        if mismatch:
            problems.append(mismatch)
            continue
        run_errors += _run_errors(loaded, name)
        judged.append(judge_suite(loaded, subject, changed))
    if not judged and not any(is_results_file(n) for n in artifact.files):
        problems.append("the artifact holds no results file (results.json or results.SUITE.json)")
    return Judged(tuple(judged), tuple(problems), tuple(run_errors))


def is_results_file(name: str) -> bool:
    """Whether a file of a run's output is a results file, by its name."""
    return _RESULTS_NAME.fullmatch(name) is not None


def _run_errors(loaded: results_file.Results, name: str, most: int = 3) -> list[str]:
    errors = [f"{name}: {loaded.error}"] if loaded.error else []
    failed = [r for r in loaded.rounds if not r.ok]
    errors += [
        f"{name}: {r.side} round {r.index} failed: {r.error or 'no reason given'}" for r in failed[:most]
    ]
    if len(failed) > most:
        more = len(failed) - most
        errors.append(f"{name}: {more} more round{'s' if more != 1 else ''} failed")
    return errors


def _mismatch(
    loaded: results_file.Results, base_sha: str, head_sha: str, suites: Sequence[str], name: str
) -> str | None:
    measured = (loaded.base.sha.lower(), loaded.head.sha.lower())
    if not (base_sha.startswith(measured[0]) and head_sha.startswith(measured[1])):
        return (
            f"{name}: measured {measured[0][:12]} → {measured[1][:12]}, not the requested "
            f"{base_sha[:12]} → {head_sha[:12]}"
        )
    if suites and loaded.suite not in suites:
        return f"{name}: suite {clip(printable(loaded.suite), 64)!r} was not asked for"
    return None


def judge_suite(
    loaded: results_file.Results, subject: str = "This PR", changed: ChangedLines | None = None
) -> SuiteJudgement:
    """One results file compared as `perfbot compare` compares it, with its defaults."""
    comparison = stats.decide(loaded)
    headline = render_compare.headline(comparison, subject)
    first = comparison.metrics[0] if comparison.metrics else None
    points = tuple(
        (m.name, m.unit, m.better, m.head_median) for m in comparison.metrics if m.head_median is not None
    )
    return SuiteJudgement(
        suite=loaded.suite,
        verdict=comparison.verdict,
        headline=headline,
        markdown=render_compare.compare_markdown(loaded, comparison, subject=subject, changed=changed),
        headline_metric=first.name if first else None,
        headline_change=first.change if first else None,
        comparison={
            **comparison.to_dict(),
            "fingerprints": _fingerprints(loaded),
            "charts": render_chart.charts_json(loaded, comparison),
        },
        points=points,
        launching_lines=_names_launching_lines(loaded),
    )


def _names_launching_lines(loaded: results_file.Results) -> bool:
    kernels = profile.diff_of(loaded.base.profile, loaded.head.profile)
    return kernels is not None and any(k.sites for k in kernels.kernels)


def _fingerprints(loaded: results_file.Results) -> dict[str, dict[str, str]]:
    """Each side's environment fingerprint, flattened to text: kept with the comparison, so that a
    bisect that no longer reproduces a regression can show the original run's environment beside
    today's."""
    return {
        side: {
            key: clip(printable(str(value)), 200)
            for key, value in list(envdiff.flatten(loaded.revision(side).fingerprint).items())[:400]
        }
        for side in ("base", "head")
    }
