"""Render a bisection's report as terminal text and as GitHub Markdown."""

from __future__ import annotations

from bot.core.bisect.report import BisectReport, Measurement
from bot.core.judge.quantities import percent
from bot.core.render.markdown import code, escape_md


def bisect_text(report: BisectReport) -> str:
    lines = [f"bisect {report.good[:10]}..{report.bad[:10]} ({report.commits} commits), "
             f"suite {report.suite}, metric {report.metric}", "", report.conclusion]
    if report.culprit is not None:
        c = report.culprit
        lines += ["", f"culprit: {c.sha}  {c.subject}", f"risk:    {c.risk.score}/100 ({c.risk.level})"]
        lines += [f"  - {reason}" for reason in c.risk.reasons[:5]]
        lines += [f"  {f.path} | {f.added + f.removed} (+{f.added} -{f.removed})" for f in c.risk.files]
    lines += ["", _runs_line(report), "", "runs:"]
    for m in report.measurements:
        lines.append(f"  {m.purpose:<9} {m.base[:10]} -> {m.head[:10]}  {m.verdict:<12} "
                     f"{_change(m):>22}  {m.outcome or '':<7} {m.why}")
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def bisect_markdown(report: BisectReport) -> str:
    lines = [f"### perfbot bisect: {escape_md(report.conclusion)}", "",
             f"Range `{report.good[:10]}..{report.bad[:10]}` ({report.commits} commits), suite "
             f"`{code(report.suite)}`, metric `{code(report.metric)}`. {_runs_line(report)}", ""]
    if report.culprit is not None:
        c = report.culprit
        lines += [f"**Culprit:** `{c.sha}` {escape_md(c.subject)} "
                  f"(risk {c.risk.score}/100, {c.risk.level})", ""]
        lines += [f"- {escape_md(reason)}" for reason in c.risk.reasons[:5]]
        lines += ["", "| file | + | - |", "|---|---:|---:|"]
        lines += [f"| {escape_md(f.path)} | {f.added} | {f.removed} |" for f in c.risk.files[:50]]
        lines.append("")
    lines += ["| run | base | head | verdict | change (95% CI) | outcome |", "|---|---|---|---|---|---|"]
    for m in report.measurements:
        lines.append(f"| {m.purpose} | `{m.base[:10]}` | `{m.head[:10]}` | {m.verdict} | "
                     f"{_change(m)} | {m.outcome or ''} |")
    return "\n".join(lines) + "\n"


def _runs_line(report: BisectReport) -> str:
    confirmations = sum(1 for m in report.measurements if m.purpose == "confirm")
    line = (f"{len(report.measurements)} benchmark runs: 1 reference, {report.probes} probes"
            + (f", {report.rechecks} re-measured" if report.rechecks else "")
            + (f", {confirmations} confirmation{'s' if confirmations > 1 else ''}" if confirmations else ""))
    if report.plain_probes is not None:
        line += f"; plain bisection would have needed {report.plain_probes} probes"
    return line + "."


def _change(m: Measurement) -> str:
    if m.ratio is None:
        return "–"
    text = percent(m.ratio - 1)
    if m.ci:
        text += f" ({percent(m.ci[0] - 1)}..{percent(m.ci[1] - 1)})"
    return text
