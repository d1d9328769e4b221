"""Render risk reports and triage rankings as terminal text and as GitHub Markdown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.core.config.rules import Rule
from bot.core.render.markdown import code, escape_md
from bot.core.risk.scoring import FileRisk, RiskReport, Signal, describe
from bot.core.vocabulary import LEVEL_ICONS

if TYPE_CHECKING:  # named for its type only: `perfbot score` need not load the triage
    from bot.core.risk.triage import Triage


def stat_lines(files: list[FileRisk], width: int = 60) -> list[str]:
    """A `git show --stat`-like listing: path | changes, with +/- bars scaled to the largest."""
    if not files:
        return []
    names = [_stat_name(f) for f in files]
    pad = min(max(len(n) for n in names), width)
    biggest = max((f.added + f.removed for f in files), default=0)
    lines = []
    for name, f in zip(names, files, strict=True):
        shown = name if len(name) <= pad else "..." + name[-(pad - 3) :]
        if f.is_binary:
            lines.append(f" {shown:<{pad}} | Bin")
            continue
        total = f.added + f.removed
        bar = _bar(f.added, f.removed, biggest)
        lines.append(f" {shown:<{pad}} | {total:>5} {bar}".rstrip())
    added, removed = sum(f.added for f in files), sum(f.removed for f in files)
    lines.append(
        f" {_count(len(files), 'file')} changed, {_count(added, 'insertion')}(+), "
        f"{_count(removed, 'deletion')}(-)"
    )
    return lines


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _stat_name(f: FileRisk) -> str:
    return f"{f.old_path} => {f.path}" if f.old_path and f.old_path != f.path else f.path


def _bar(added: int, removed: int, biggest: int, width: int = 30) -> str:
    if biggest <= width:
        return "+" * added + "-" * removed
    scale = width / biggest
    plus = max(1, round(added * scale)) if added else 0
    minus = max(1, round(removed * scale)) if removed else 0
    return "+" * plus + "-" * minus


def report_text(report: RiskReport, max_reasons: int = 10) -> str:
    lines = [f"risk: {report.score}/100 ({report.level}), profile {report.profile}"]
    if report.signals:
        lines.append("reasons:")
        lines += [f"  - {s.sentence()}" for s in report.signals[:max_reasons]]
        if len(report.signals) > max_reasons:
            lines.append(f"  ... and {len(report.signals) - max_reasons} more")
    hot = [f for f in report.files if f.signals]
    if hot:
        lines.append("files:")
        lines += [f"  {f.score:>3}  {f.path}" for f in hot]
    cold = [f for f in report.files if f.cold]
    if cold:
        lines.append(f"cold files (no effect on inference speed): {len(cold)}")
    if report.improvements:
        lines.append(f"possible improvements (weighed apart, {report.improvement}/100):")
        lines += [f"  - {s.sentence()}" for s in report.improvements[:max_reasons]]
    lines += [f"note: {n}" for n in report.notes]
    lines += [f"warning: {w}" for w in report.warnings]
    return "\n".join(lines) + "\n"


def report_markdown(report: RiskReport, max_reasons: int = 10, max_files: int = 30) -> str:
    mark = LEVEL_ICONS[report.level]
    lines = [f"### {mark} Performance risk: **{report.level}** ({report.score}/100)", ""]
    if report.signals:
        lines.append("| weight | rule | where | why |")
        lines.append("|---:|---|---|---|")
        for s in report.signals[:max_reasons]:
            where = _where(s)
            why = describe(s, escape_md, lambda match: f"`{code(match)}`")
            weight = f"{s.weight:g}"
            if s.full_weight is not None:
                weight += f" of {s.full_weight:g}"
                why += f" ({escape_md(s.note or '')})"
            if s.also:
                why += "; also " + ", ".join(f"`{code(rule)}`" for rule in s.also)
            lines.append(f"| {weight} | `{code(s.rule)}` | {where} | {why} |")
        if len(report.signals) > max_reasons:
            lines.append(f"\n…and {len(report.signals) - max_reasons} more reasons.")
    else:
        lines.append("No hot path is touched.")
    if report.improvements:
        lines += ["", "**Possible improvements** (weighed apart from the risk):", ""]
        lines += [
            f"- {describe(s, escape_md, lambda match: f'`{code(match)}`')} — {_where(s)} "
            f"(`{code(s.rule)}`, {s.weight:g})"
            for s in report.improvements[:max_reasons]
        ]
    hot = [f for f in report.files if f.signals and f.cold is None]
    if hot:
        lines += ["", "<details><summary>Files by risk</summary>", ""]
        lines += [f"- {f.score} — {escape_md(f.path)}" for f in hot[:max_files]]
        if len(hot) > max_files:
            lines.append(f"- …and {len(hot) - max_files} more")
        lines += ["", "</details>"]
    lines += [f"\n> **Note:** {escape_md(n)}" for n in report.notes]
    lines += [f"\n> **Warning:** {escape_md(w)}" for w in report.warnings[:10]]
    return "\n".join(lines) + "\n"


def _where(s: Signal) -> str:
    where = escape_md(s.path) + (f":{s.line}" if s.line else "")
    return where + (f" in `{code(s.function)}`" if s.function else "")


def triage_text(triage: Triage, max_reasons: int = 3, show_files: bool = True) -> str:
    lines = [f"triage of {triage.range}: {_shown(triage)}, profile {triage.profile}", ""]
    for rank, item in enumerate(triage.commits, 1):
        c, r = item.commit, item.report
        lines.append(f"{rank:>3}. {c.sha[:10]}  {r.score:>3} {r.level:<6}  {c.subject}")
        lines += [f"       - {s.sentence()}" for s in r.signals[:max_reasons]]
        lines += [f"       note: {n}" for n in r.notes]
        if show_files:
            lines += ["      " + s for s in stat_lines(r.files)]
        lines.append("")
    return "\n".join(lines)


def triage_markdown(triage: Triage, max_reasons: int = 3) -> str:
    lines = [
        f"### Triage of `{code(triage.range)}` ({_shown(triage)})",
        "",
        "| # | commit | score | level | subject | top reasons |",
        "|---:|---|---:|---|---|---|",
    ]
    for rank, item in enumerate(triage.commits, 1):
        c, r = item.commit, item.report
        reasons = "<br>".join(escape_md(s.sentence()) for s in r.signals[:max_reasons])
        lines.append(
            f"| {rank} | `{code(c.sha[:10])}` | {r.score} | {LEVEL_ICONS[r.level]} {r.level} "
            f"| {escape_md(c.subject)} | {reasons} |"
        )
    return "\n".join(lines) + "\n"


def _shown(triage: Triage) -> str:
    """'3 commits', or '3 of 3000 commits' when only the most suspicious are listed."""
    shown = len(triage.commits)
    if shown == triage.ranked:
        return f"{shown} commit{'s' if shown != 1 else ''}"
    return f"{shown} of {triage.ranked} commits"


def rules_markdown(rules: list[Rule]) -> str:
    """A table of rules as `perfbot config rules` prints it and docs/risk.md shows it."""
    lines = ["| id | kind | category | weight | what | matches |", "|---|---|---|---:|---|---|"]
    for r in rules:
        matches = [", ".join(f"`{code(p)}`" for p in r.paths)] if r.paths else []
        if r.pattern:
            matches.append(f"`{code(r.pattern)}`")
        scope = " (in hot files or functions only)" if r.scope == "hot" else ""
        lines.append(
            f"| `{code(r.id)}` | {escape_md(r.kind)} | {escape_md(r.category)} | {r.weight:g} | "
            f"{escape_md(r.description)}{scope} | {'; '.join(matches)} |"
        )
    return "\n".join(lines) + "\n"


def rules_text(rules: list[Rule]) -> str:
    lines = []
    for r in rules:
        scope = ", hot only" if r.scope == "hot" else ""
        lines.append(f"{r.id:<28} {r.kind:<10} {r.category:<15} {r.weight:>4g}  {r.description}{scope}")
    return "\n".join(lines) + "\n"
