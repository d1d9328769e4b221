"""Render a bisection's report as terminal text and as GitHub Markdown.

A report whose regression was not reproduced (or whose reference run measured nothing) shows, in
place of a culprit, the environment fingerprints of GOOD and BAD as this run recorded them side by
side, the keys whose values differ first: what a reader compares with the runs that first saw the
regression.
"""

from __future__ import annotations

from bot.core.bisect.report import BisectReport, Measurement
from bot.core.judge.quantities import percent
from bot.core.render.markdown import code, escape_md
from bot.core.text import printable

FINGERPRINT_ROWS = 120  # fingerprint keys shown, at most; a count says how many more there are


def bisect_text(report: BisectReport) -> str:
    lines = [
        f"bisect {report.good[:10]}..{report.bad[:10]} ({report.commits} commits), "
        f"suite {report.suite}, metric {report.metric}",
        "",
        report.conclusion,
    ]
    if report.culprit is not None:
        c = report.culprit
        lines += ["", f"culprit: {c.sha}  {c.subject}", f"risk:    {c.risk.score}/100 ({c.risk.level})"]
        lines += [f"  - {reason}" for reason in c.risk.reasons[:5]]
        lines += [f"  {f.path} | {f.added + f.removed} (+{f.added} -{f.removed})" for f in c.risk.files]
    if report.status in ("not_reproduced", "error"):
        lines += ["", "fingerprints (GOOD | BAD), as measured in this run:"]
        rows = _fingerprint_rows(report)
        width = max((len(key) for key, _, _, _ in rows[:FINGERPRINT_ROWS]), default=0)
        lines += [
            f"  {'*' if differs else ' '} {printable(key):<{width}}  {printable(g)} | {printable(b)}"
            for key, g, b, differs in rows[:FINGERPRINT_ROWS]
        ]
        if len(rows) > FINGERPRINT_ROWS:
            lines.append(f"  ... and {len(rows) - FINGERPRINT_ROWS} more keys")
        lines.append("  (* differs between GOOD and BAD)" if rows else "  none recorded")
    lines += ["", _runs_line(report), "", "runs:"]
    for m in report.measurements:
        lines.append(
            f"  {m.purpose:<9} {m.base[:10]} -> {m.head[:10]}  {m.verdict:<12} "
            f"{_change(m):>22}  {m.outcome or '':<7} {m.why}"
        )
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def bisect_markdown(report: BisectReport) -> str:
    lines = [
        f"### perfbot bisect: {escape_md(report.conclusion)}",
        "",
        f"Range `{code(report.good[:10])}..{code(report.bad[:10])}` ({report.commits} commits), suite "
        f"`{code(report.suite)}`, metric `{code(report.metric)}`. {_runs_line(report)}",
        "",
    ]
    if report.culprit is not None:
        c = report.culprit
        lines += [
            f"**Culprit:** `{code(c.sha)}` {escape_md(c.subject)} (risk {c.risk.score}/100, {c.risk.level})",
            "",
        ]
        lines += [f"- {escape_md(reason)}" for reason in c.risk.reasons[:5]]
        lines += ["", "| file | + | - |", "|---|---:|---:|"]
        lines += [f"| {escape_md(f.path)} | {f.added} | {f.removed} |" for f in c.risk.files[:50]]
        lines.append("")
    if report.status in ("not_reproduced", "error"):
        lines += _fingerprint_table(report)
    lines += ["| run | base | head | verdict | change (95% CI) | outcome |", "|---|---|---|---|---|---|"]
    for m in report.measurements:
        lines.append(
            f"| {escape_md(m.purpose)} | `{code(m.base[:10])}` | `{code(m.head[:10])}` | "
            f"{escape_md(m.verdict)} | {_change(m)} | {escape_md(m.outcome or '')} |"
        )
    return "\n".join(lines) + "\n"


def _fingerprint_rows(report: BisectReport) -> list[tuple[str, str, str, bool]]:
    """(key, GOOD's value, BAD's value, whether they differ), differing keys first."""
    good, bad = report.fingerprints.get("good", {}), report.fingerprints.get("bad", {})
    rows = [
        (key, good.get(key, "–"), bad.get(key, "–"), good.get(key) != bad.get(key))
        for key in sorted(good.keys() | bad.keys())
    ]
    rows.sort(key=lambda row: not row[3])
    return rows


def _fingerprint_table(report: BisectReport) -> list[str]:
    rows = _fingerprint_rows(report)
    if not rows:
        return ["No environment fingerprint was recorded.", ""]
    differing = sum(1 for row in rows if row[3])
    lines = [
        f"<details><summary>Environment fingerprints of GOOD and BAD, as measured in this run "
        f"({differing} differ)</summary>",
        "",
        "| key | GOOD | BAD | differs |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{code(key)}` | `{code(g)}` | `{code(b)}` | {'yes' if differs else ''} |"
        for key, g, b, differs in rows[:FINGERPRINT_ROWS]
    ]
    if len(rows) > FINGERPRINT_ROWS:
        lines += ["", f"… and {len(rows) - FINGERPRINT_ROWS} more keys."]
    return lines + ["", "</details>", ""]


def _runs_line(report: BisectReport) -> str:
    confirmations = sum(1 for m in report.measurements if m.purpose == "confirm")
    line = (
        f"{len(report.measurements)} benchmark runs: 1 reference, {report.probes} probes"
        + (f", {report.rechecks} re-measured" if report.rechecks else "")
        + (f", {confirmations} confirmation{'s' if confirmations > 1 else ''}" if confirmations else "")
    )
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
