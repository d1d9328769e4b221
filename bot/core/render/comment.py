"""The sticky PR comment of a risk review: Markdown bounded far below GitHub's 65,536 characters.

Every part has a fixed item count and every item a clipped length, so the size is bounded by
construction whatever the PR's size; `markdown.fit` is a last guard, never the plan. The review is
rendered once: the comment is the review under a marker, the check run's summary the review itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.render.markdown import code, escape_md, fit
from bot.core.risk.scoring import FileRisk, RiskReport, Signal, describe
from bot.core.text import clip
from bot.core.vocabulary import LEVEL_ICONS

MARKER = "<!-- perfbot:risk-review -->"
GITHUB_LIMIT = 65_536
BUDGET = 60_000  # leaves room for the marker and for anything GitHub counts differently
MAX_REASONS = 8
MAX_FILES = 15
MAX_NOTES = 5
MAX_PATH = 160
MAX_TEXT = 300
# The config's problem line names a key path (as long as the file makes it) and then what perfbot
# does about it, the held runs last: a cut at MAX_TEXT would take the part a maintainer must read.
MAX_CONFIG_TEXT = 1000

_HEADLINE = {
    "high": "this change touches inference hot paths and is likely to move performance",
    "medium": "this change touches code on or near inference hot paths",
    "low": "this change is unlikely to affect inference speed",
    "none": "no inference hot path is touched",
}
_NEXT = {
    "high": "Benchmarks are recommended before merging: a maintainer can comment `/bench` to "
    "measure base against head on the GPU runners.",
    "medium": "Comment `/bench` to measure base against head on the GPU runners if in doubt.",
    "low": "No benchmark is needed; comment `/bench` to run one anyway.",
    "none": "Nothing to do.",
}


@dataclass(frozen=True)
class PullContext:
    """Where the review is published: the PR's web address, its head commit, the config's branch."""

    html_url: str
    head_sha: str
    config_ref: str
    config_error: str | None = None


def diff_anchor(path: str, line: int | None, side: str = "new") -> str:
    """GitHub's anchor for a line in a PR's "Files changed" tab: ``diff-<sha256(path)>R<line>``."""
    anchor = "diff-" + hashlib.sha256(path.encode("utf-8")).hexdigest()
    if line is None:
        return anchor
    return f"{anchor}{'L' if side == 'old' else 'R'}{line}"


def what_happens_next(level: str) -> str:
    return _NEXT[level]


def with_marker(review: str, *sections: str) -> str:
    """The comment that carries a rendered review, and the sections below it (benchmarks)."""
    return "\n".join([f"{MARKER}\n{review}", *(s for s in sections if s)])


def review_markdown(report: RiskReport, pull: PullContext, budget: int = BUDGET) -> str:
    """The review without the marker (also the check run's summary), within ``budget`` with the
    marker added (less than `BUDGET` when the comment holds more than the review)."""
    return fit_review(review_blocks(report, pull), budget)


def review_blocks(report: RiskReport, pull: PullContext) -> tuple[str, ...]:
    """The review's parts, in order: stored with the review, so that the sticky comment can be
    composed again (with a benchmark section below it) without scoring the diff again."""
    return (
        _headline(report),
        _reasons(report, pull),
        _improvements(report, pull),
        _hot_files(report, pull),
        _cold_files(report),
        _notes(report, pull),
        f"**What happens next:** {what_happens_next(report.level)}",
        _footer(report, pull),
    )


def fit_review(blocks: Sequence[str], budget: int = BUDGET) -> str:
    """The review from its parts, within ``budget`` once the marker is added."""
    return fit(blocks, budget - len(MARKER) - 1)


def _headline(report: RiskReport) -> str:
    return (
        f"### {LEVEL_ICONS[report.level]} Performance risk: **{report.level}** ({report.score}/100)\n\n"
        f"perfbot reviewed the diff: {_HEADLINE[report.level]}."
    )


def _reasons(report: RiskReport, pull: PullContext) -> str:
    signals = report.signals[:MAX_REASONS]
    if not signals:
        return ""
    lines = ["**Top reasons**", ""]
    lines += [f"{i}. {_reason(s, pull)}" for i, s in enumerate(signals, 1)]
    if len(report.signals) > MAX_REASONS:
        lines.append(f"\n…and {len(report.signals) - MAX_REASONS} more.")
    return "\n".join(lines)


def _reason(signal: Signal, pull: PullContext) -> str:
    what = describe(signal, lambda text: escape_md(_clip(text, MAX_TEXT)), lambda match: f"`{_code(match)}`")
    where = _clip(signal.path, MAX_PATH) + (f":{signal.line}" if signal.line else "")
    link = f"[{escape_md(where)}]({_files_url(pull)}#{diff_anchor(signal.path, signal.line, signal.side)})"
    inside = f" in `{_code(signal.function)}`" if signal.function else ""
    extra = escape_md(_clip(signal.qualifier(), MAX_TEXT))
    weight = f"{signal.weight:g}, not in the score" if signal.improves else f"+{signal.weight:g}"
    return f"{what} — {link}{inside} (`{_code(signal.rule)}`, {weight}{extra})"


def _improvements(report: RiskReport, pull: PullContext) -> str:
    """Removed syncs, copies and allocations: worth a look, never part of the risk."""
    shown = report.improvements[:MAX_REASONS]
    if not shown:
        return ""
    lines = ["**Possible improvements** (weighed apart from the risk)", ""]
    lines += [f"- {_reason(s, pull)}" for s in shown]
    if len(report.improvements) > MAX_REASONS:
        lines.append(f"\n…and {len(report.improvements) - MAX_REASONS} more.")
    return "\n".join(lines)


def _hot_files(report: RiskReport, pull: PullContext) -> str:
    hot = [f for f in report.files if f.signals and f.cold is None]
    if not hot:
        return ""
    lines = ["**Hot files touched**", "", "| score | file | changes |", "|---:|---|---:|"]
    lines += [_file_row(f, pull) for f in hot[:MAX_FILES]]
    if len(hot) > MAX_FILES:
        lines.append(f"\n…and {len(hot) - MAX_FILES} more hot files.")
    return "\n".join(lines)


def _cold_files(report: RiskReport) -> str:
    cold = sum(1 for f in report.files if f.cold)
    if not cold:
        return ""
    return f"{cold} changed file{'s' if cold != 1 else ''} cannot affect inference speed (docs, tests, CI…)."


def _file_row(f: FileRisk, pull: PullContext) -> str:
    name = escape_md(_clip(f.path, MAX_PATH))
    changes = "binary" if f.is_binary else f"+{f.added} −{f.removed}"
    return f"| {f.score} | [{name}]({_files_url(pull)}#{diff_anchor(f.path, None)}) | {changes} |"


def _notes(report: RiskReport, pull: PullContext) -> str:
    notes = [f"> **Note:** {escape_md(_clip(n, MAX_TEXT))}" for n in report.notes[:MAX_NOTES]]
    if pull.config_error:
        # The line says which keys were left out and that the automatic runs are held; this says
        # only what it leaves unsaid (it said the held runs a second time, in other words).
        notes.append(
            f"> **Config problem:** {escape_md(_clip(pull.config_error, MAX_CONFIG_TEXT))}. "
            "The keys left out take their built-in defaults in this review."
        )
    notes += [f"> **Warning:** {escape_md(_clip(w, MAX_TEXT))}" for w in report.warnings[:MAX_NOTES]]
    if len(report.warnings) > MAX_NOTES:
        notes.append(f"> …and {len(report.warnings) - MAX_NOTES} more warnings.")
    return "\n>\n".join(notes)


def _footer(report: RiskReport, pull: PullContext) -> str:
    ref = _code(_clip(pull.config_ref, 100))
    return (
        f"<sub>perfbot · profile `{_code(report.profile)}` · config from `{ref}`"
        f" · head `{_code(pull.head_sha[:12])}` · this comment is updated on every push</sub>"
    )


def _files_url(pull: PullContext) -> str:
    return pull.html_url.rstrip("/") + "/files"


def _clip(text: str, limit: int) -> str:
    # The middle goes: a path's directory and file name, a message's start and end say the most.
    return clip(text, limit, keep="ends")


def _code(text: str) -> str:
    return code(_clip(text, MAX_TEXT))
