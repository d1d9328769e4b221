"""Render a comparison (`stats.Comparison`) as terminal text and as the Markdown a PR shows.

Everything that came from the results file is escaped (Markdown, `bot.core.render.markdown`) or
made printable (text), and the Markdown stays under GitHub's 65,536-character comment limit for any
input: long tables are cut, and the report says so.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from bot.core.judge import profile, speculation
from bot.core.judge.envdiff import EnvDifference, flatten
from bot.core.judge.quantities import number, percent
from bot.core.judge.results import SIDES, Results, Side
from bot.core.judge.stats import (
    MAX_EXTRA_ROUNDS,
    MIN_ROUNDS,
    OUTLIER_MADS,
    TRIM_ROUNDS,
    Comparison,
    MetricJudgement,
    Settings,
)
from bot.core.render.chart import charts_markdown, no_chart, round_charts
from bot.core.render.kernels import ChangedLines, kernels_markdown, kernels_text
from bot.core.render.markdown import code_block, escape_md, fit
from bot.core.text import clip, printable
from bot.core.vocabulary import VERDICT_ICONS

MAX_MARKDOWN_CHARS = 60_000  # GitHub refuses comments over 65,536; leave room for a wrapper
MAX_METRIC_ROWS = 40
MAX_ENV_ROWS = 20
MAX_ROUND_VALUES = 30
MAX_TEXT = 300
REPRODUCE = (
    "perfbot bench run --base {base} --head {head} --suite {suite} --out results.json\n"
    "perfbot compare results.json --format markdown"
)

_ICON = VERDICT_ICONS
_RUNNER_KEYS = (
    "host.name",
    "gpus.0.name",
    "driver",
    "torch.version",
    "torch.cuda",
    "torch.nccl",
    "cpu.model",
)


def headline(comparison: Comparison, subject: str = "This PR") -> str:
    """One line that says what happened, in words: 'This PR makes the EAGLE-3 cycle 9% slower with
    piecewise CUDA graphs'. It speaks of the primary metrics, the suite's headline metric first."""
    if comparison.verdict == "error":
        return _no_verdict(comparison)
    if comparison.withheld:
        return "No verdict: base and head did not run in the same environment"
    if comparison.verdict in ("regression", "improvement"):
        return _claimed(comparison, subject)
    if comparison.verdict == "inconclusive":
        return _inconclusive(comparison)
    return _unchanged(comparison)


def _rounds(comparison: Comparison) -> int:
    return min(comparison.rounds.values(), default=0)


def _per_side(rounds: int) -> str:
    """'1 round per side', '3 rounds per side'."""
    return f"{rounds} round{'' if rounds == 1 else 's'} per side"


def _more_rounds(extra: int) -> str:
    """'1 more round', '4 more rounds'."""
    return f"{extra} more round{'' if extra == 1 else 's'}"


def _no_verdict(comparison: Comparison) -> str:
    reason = next((m.reason for m in comparison.deciding if m.verdict == "error"), None)
    return f"No verdict: {(comparison.notes or [reason or 'nothing to judge'])[-1]}"


def _claimed(comparison: Comparison, subject: str) -> str:
    """A regression or an improvement: the headline metric's effect first, then how many more."""
    verdict = comparison.verdict
    hits = sorted(
        (m for m in comparison.deciding if m.verdict == verdict), key=lambda m: m.role != "headline"
    )
    line = f"{subject} {_effect_phrase(hits[0])}"
    if len(hits) > 1:
        line += f", and {len(hits) - 1} more {verdict}{'s' if len(hits) > 2 else ''}"
    spec = comparison.speculation
    if spec is not None and spec.stopped_paying and spec.speedup_after is not None:
        line += f"; speculation is now {1 - spec.speedup_after:.0%} slower than not speculating"
    return line


def _inconclusive(comparison: Comparison) -> str:
    extra = comparison.extra_rounds
    more = f": about {extra} more per side would likely decide" if extra else ""
    if extra and extra >= MAX_EXTRA_ROUNDS:
        more = f": the noisiest metrics would need more than {MAX_EXTRA_ROUNDS} more per side"
    return f"Inconclusive after {_per_side(_rounds(comparison))}{more}"


def _unchanged(comparison: Comparison) -> str:
    margin = comparison.settings.min_effect
    steady = [m for m in comparison.metrics if m.verdict == "unchanged"]
    lead = next((m for m in steady if m.role == "headline" and m.mode), None)
    among = f", {speculation.label(lead.name)}{speculation.mode_phrase(lead.mode)} among them" if lead else ""
    undecided = sum(1 for m in comparison.metrics if not m.primary and m.verdict == "inconclusive")
    tail = f"; {undecided} diagnostic{'s' if undecided > 1 else ''} undecided" if undecided else ""
    count = f"{len(steady)} metric{'s' if len(steady) != 1 else ''}"
    return f"No change beyond ±{margin:.0%} in {count}{among} ({_per_side(_rounds(comparison))}){tail}"


def _effect_phrase(m: MetricJudgement) -> str:
    change = m.change or 0.0
    size = f"{abs(change):.0%}" if abs(change) >= 0.095 else f"{abs(change):.1%}"
    kind = _kind(m)
    what, how = speculation.label(m.name), speculation.mode_phrase(m.mode)
    if kind == "time":
        return f"makes {what} {size} {'slower' if change > 0 else 'faster'}{how}"
    if kind == "rate":
        return f"makes {what} {size} {'faster' if change > 0 else 'slower'}{how}"
    return f"{'raises' if change > 0 else 'lowers'} {what} by {size}{how}"


def _kind(m: MetricJudgement) -> str:
    role = speculation.ROLES.get(m.name)
    if role is not None:
        return role.quantity
    unit = m.unit.lower()
    if unit in ("s", "ms", "us", "µs", "ns", "sec", "seconds"):
        return "time"
    return "rate" if "/s" in unit else "count"


# ---------------------------------------------------------------- Markdown


def compare_markdown(
    results: Results,
    comparison: Comparison,
    reproduce: str | None = None,
    subject: str = "This PR",
    changed: ChangedLines | None = None,
) -> str:
    """The PR comment body: headline, table, speculation, environment, details, reproduce.
    ``changed``: the lines the change touched, which the kernel diff marks where they launched a kernel."""
    icon = "⚠️" if comparison.withheld and comparison.verdict != "error" else _ICON[comparison.verdict]
    blocks = [
        f"### {icon} {escape_md(headline(comparison, subject))}\n\n{_subline(results, comparison)}",
        _metric_table(comparison.metrics),
    ]
    # A comparison that found no change keeps its chart folded away: the comment stays short.
    charts = round_charts(results, comparison)
    blocks.append(charts_markdown(charts, collapsed=comparison.verdict == "unchanged"))
    blocks.append(no_chart(results, comparison))  # why a charted metric has none, if one has not
    blocks += _speculation_block(comparison)
    blocks.append(_environment_block(comparison.environment))
    kernels = profile.diff_of(results.base.profile, results.head.profile)
    if kernels is not None:
        blocks.append(kernels_markdown(kernels, changed))
    failed = sorted((results.profile_errors or {}).items())
    blocks += [
        f"> **Note:** no kernel diff: the profiled pass of {side} failed: " + escape_md(clip(why, MAX_TEXT))
        for side, why in failed
        if why
    ]
    blocks += [f"> **Warning:** {escape_md(clip(w, MAX_TEXT))}" for w in comparison.warnings[:10]]
    blocks += [f"> **Note:** {escape_md(clip(n, MAX_TEXT))}" for n in comparison.notes[:10]]
    blocks += [_rounds_details(results, comparison), _method_details(results, comparison)]
    blocks.append(_reproduce_block(results, reproduce))
    return fit(blocks, MAX_MARKDOWN_CHARS)


def _subline(results: Results, comparison: Comparison) -> str:
    counts = [f"{side} {len(results.rounds_of(side)) - len(results.failures(side))}" for side in SIDES]
    return (
        f"<sub>perfbot compare · suite {escape_md(clip(results.suite, 60))} · base "
        f"`{results.base.sha[:12]}` → head `{results.head.sha[:12]}` · successful rounds: "
        f"{', '.join(counts)} · verdict **{comparison.verdict}**</sub>"
    )


def _metric_table(metrics: Sequence[MetricJudgement]) -> str:
    if not metrics:
        return "No metric was measured."
    lines = [
        "| metric | base | head | change | interval the verdict used | verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for m in metrics[:MAX_METRIC_ROWS]:
        lines.append(
            f"| {_metric_cell(m)} | {number(m.base_center)} | {number(m.head_center)} | "
            f"{percent(m.change)} | {_ci(m)} | {_verdict_cell(m)} |"
        )
    if len(metrics) > MAX_METRIC_ROWS:
        lines.append(
            f"\n…and {len(metrics) - MAX_METRIC_ROWS} more metrics, left out to keep this "
            "comment short (`perfbot compare --format json` lists them all)."
        )
    return "\n".join(lines)


def _metric_cell(m: MetricJudgement) -> str:
    arrow = "↓" if m.better == "lower" else "↑"
    unit = f" {escape_md(m.unit)}" if m.unit else ""
    return f"`{m.name}`{unit} {arrow}{_qualifiers(m, escape_md)}"


def _qualifiers(m: MetricJudgement, clean: Callable[[str], str]) -> str:
    """' · piecewise · diagnostic': how the engine ran, and a metric that does not decide."""
    words = ([clean(clip(m.mode, 40))] if m.mode else []) + (["diagnostic"] if not m.primary else [])
    return "".join(f" · {word}" for word in words)


def _ci(m: MetricJudgement, dash: str = "–", between: str = " … ") -> str:
    """The interval the verdict used, with its level: '-0.5% … +22.2% (99.5%)'. A claim's or an
    inconclusive change's is the significance test's interval (wider than 95% where several
    metrics or looks share alpha), so it leaves out 0 exactly when the change was significant."""
    if m.interval is None or m.interval_confidence is None:
        return dash
    low, high = m.interval
    return f"{percent(low - 1)}{between}{percent(high - 1)} ({level(m.interval_confidence)})"


def level(confidence: float) -> str:
    """A confidence level in at most two decimals, more only where it would read 100%: 95%,
    97.5%, 99.67%."""
    for digits in range(2, 7):
        text = f"{confidence * 100:.{digits}f}".rstrip("0").rstrip(".")
        if float(text) < 100:
            return f"{text}%"
    return f"{confidence * 100:.6f}%"


def _verdict_cell(m: MetricJudgement) -> str:
    cell = f"{_ICON[m.verdict]} {m.verdict}"
    if m.verdict == "inconclusive" and m.extra_rounds:
        cell += f" (≈{_more_rounds(m.extra_rounds)})"
    return cell


def _speculation_block(comparison: Comparison) -> list[str]:
    spec = comparison.speculation
    if spec is None or not spec.sentences:
        return []
    blocks = ["**Speculation.** " + " ".join(escape_md(s) for s in spec.sentences)]
    if spec.break_even:  # a line of its own: whether speculation still pays is news by itself
        # Decided with the line, on the head's interval: a speed-up that may be 1 warns of nothing.
        blocks.append(
            f"**Speculation break-even.** {'⚠️' if spec.short else '✅'} {escape_md(spec.break_even)}"
        )
    return blocks


def _environment_block(differences: Sequence[EnvDifference]) -> str:
    material = [d for d in differences if d.material]
    readings = [d for d in differences if not d.material]
    if not material:
        text = "**Environment.** Same on both sides"
        text += (
            f" (live readings that moved: {escape_md(', '.join(d.key for d in readings[:8]))})."
            if readings
            else "."
        )
        return text
    lines = [
        "**Environment.** ⚠️ Base and head ran in different environments, so no regression "
        "or improvement is claimed. Most likely to matter first:",
        "",
        "| key | base | head |",
        "|---|---|---|",
    ]
    for d in material[:MAX_ENV_ROWS]:
        lines.append(f"| {escape_md(clip(d.key, 80))} | {_env_value(d.base)} | {_env_value(d.head)} |")
    if len(material) > MAX_ENV_ROWS:
        lines.append(f"\n…and {len(material) - MAX_ENV_ROWS} more differences.")
    return "\n".join(lines)


def _env_value(value: str | None) -> str:
    return "*(absent)*" if value is None else escape_md(clip(value, 80))


def _rounds_details(results: Results, comparison: Comparison) -> str:
    lines = [
        "<details><summary>Per-round values</summary>",
        "",
        "| metric | base rounds | head rounds |",
        "|---|---|---|",
    ]
    for m in comparison.metrics[:MAX_METRIC_ROWS]:
        cells = [_round_values(results, side, m.name) for side in SIDES]
        lines.append(f"| `{m.name}` | {cells[0]} | {cells[1]} |")
    lines.append("")
    lines.append("✗ = failed round, left out of the statistics.")
    return "\n".join(lines + ["", "</details>"])


def _round_values(results: Results, side: Side, metric: str) -> str:
    values = ["✗" if not r.ok else number(r.metrics.get(metric)) for r in results.rounds_of(side)]
    shown = ", ".join(values[:MAX_ROUND_VALUES])
    return shown + (f", … ({len(values)} in all)" if len(values) > MAX_ROUND_VALUES else "")


def _method_details(results: Results, comparison: Comparison) -> str:
    s = comparison.settings
    lines = [
        "<details><summary>Method, rounds and runner</summary>",
        "",
        "- Each metric: the rounds are the unit of replication (far outliers, over "
        f"{OUTLIER_MADS:g} robust deviations from the pooled median, left out where a side has at "
        f"least {TRIM_ROUNDS} rounds); base and head are the geometric means of their "
        f"rounds, {_weighting(comparison)}; change = head/base − 1 with a "
        f"t interval on rounds − 2 degrees of freedom. The interval shown is the one the verdict "
        f'used: for "unchanged" the {level(s.confidence)} interval of the equivalence test, '
        "otherwise the significance test's, at the level that metric was tested at after the "
        "adjustment below (it leaves out 0 exactly when the change is significant).",
        "- Significance: the t-test of that random-effects model, Holm-adjusted across the "
        f"{_family_size(comparison)} at α = {s.alpha:.2g}{_looks(s)}; diagnostics are "
        "adjusted among themselves and never decide the verdict (Kolmogorov-Smirnov flags "
        "changes of shape only).",
        f"- Regression or improvement: significant and at least {s.min_effect:.1%}; unchanged: "
        f"the interval lies within ±{s.min_effect:.1%}; otherwise inconclusive. At least "
        f"{MIN_ROUNDS} successful rounds per side before anything but inconclusive.",
        "- Rounds: " + "; ".join(_round_summary(results, side) for side in SIDES) + ".",
    ]
    runner = _runner_summary(results)
    if runner:
        lines.append(f"- Runner: {runner}.")
    readings = [d for d in comparison.environment if not d.material]
    if readings:
        lines.append(
            "- Live readings that differ (not counted as an environment change): "
            + "; ".join(
                f"{escape_md(clip(d.key, 60))} {_env_value(d.base)} → {_env_value(d.head)}"
                for d in readings[:10]
            )
            + "."
        )
    return "\n".join(lines + ["", "</details>"])


def _weighting(comparison: Comparison) -> str:
    weighted = [m.name for m in comparison.metrics if m.estimate.fit is not None and m.estimate.fit.weighted]
    if not weighted:
        return "every round weighing the same (the runner recorded no per-round spread)"
    which = "" if len(weighted) == len(comparison.metrics) else f" (for {len(weighted)} metrics)"
    return f"each round weighted by how much its timed calls scattered{which}"


def _family_size(comparison: Comparison) -> str:
    primary = sum(1 for m in comparison.metrics if m.primary)
    count = len(comparison.metrics) if primary in (0, len(comparison.metrics)) else primary
    kind = "" if count == len(comparison.metrics) else " primary"
    return f"{count}{kind} metric{'s' if count != 1 else ''}"


def _looks(s: Settings) -> str:
    if s.looks == 1:
        return ""
    return f", that is {s.alpha * s.looks:g} split over the {s.looks} looks of an adaptive run"


def _round_summary(results: Results, side: Side) -> str:
    failed = len(results.failures(side))
    return f"{side} {len(results.rounds_of(side)) - failed} ok, {failed} failed"


def _runner_summary(results: Results) -> str:
    flat = flatten(results.head.fingerprint)
    parts = [f"{key} {escape_md(clip(str(flat[key]), 60))}" for key in _RUNNER_KEYS if key in flat]
    return ", ".join(parts)


def _reproduce_block(results: Results, reproduce: str | None) -> str:
    command = (
        reproduce
        if reproduce is not None
        else REPRODUCE.format(base=results.base.sha, head=results.head.sha, suite=_shell_word(results.suite))
    )
    return "**Reproduce:**\n\n" + code_block(clip(command, 2000), "sh")


def _shell_word(text: str) -> str:
    """A suite name fit for a copy-pasted shell line: printable, short, quoted when needed."""
    return shlex.quote(printable(clip(text, 100), replacement=""))


# ---------------------------------------------------------------- text


def compare_text(results: Results, comparison: Comparison, changed: ChangedLines | None = None) -> str:
    """The same report for a terminal: no Markdown, no control characters from the input."""
    said = printable(headline(comparison))
    # "inconclusive: Inconclusive after 3 rounds" says it twice: the verdict leads only where the
    # headline does not already start with it.
    first = said if said.lower().startswith(comparison.verdict) else f"{comparison.verdict}: {said}"
    lines = [
        first,
        f"suite {printable(clip(results.suite, 100))}, base {results.base.sha[:12]}, head "
        f"{results.head.sha[:12]}; " + "; ".join(_round_summary(results, s) for s in SIDES),
        "",
    ]
    lines += _text_table(comparison.metrics)
    if comparison.speculation and comparison.speculation.sentences:
        lines += ["", "speculation:"] + [f"  {printable(s)}" for s in comparison.speculation.sentences]
        if comparison.speculation.break_even:
            lines.append(f"  break-even: {printable(comparison.speculation.break_even)}")
    if comparison.environment:
        lines += ["", "environment differences (most likely to matter first):"]
        lines += [
            f"  {'*' if d.material else ' '} {printable(clip(d.key, 80))}: "
            f"{printable(clip(str(d.base), 60))} -> {printable(clip(str(d.head), 60))}"
            for d in comparison.environment[:MAX_ENV_ROWS]
        ]
        lines.append("  (* = counts as a different environment; others are live readings)")
    kernels = profile.diff_of(results.base.profile, results.head.profile)
    if kernels is not None:
        lines += [""] + kernels_text(kernels, changed)
    lines += [
        f"note: no kernel diff: the profiled pass of {side} failed: {printable(clip(why, MAX_TEXT))}"
        for side, why in sorted((results.profile_errors or {}).items())
        if why
    ]
    lines += [f"warning: {printable(clip(w, MAX_TEXT))}" for w in comparison.warnings]
    lines += [f"note: {printable(clip(n, MAX_TEXT))}" for n in comparison.notes]
    return "\n".join(lines) + "\n"


def _text_table(metrics: Sequence[MetricJudgement]) -> list[str]:
    rows = [("metric", "base", "head", "change", "interval (level)", "verdict")]
    for m in metrics:
        interval = _ci(m, dash="-", between=" .. ")
        verdict = m.verdict + (
            f" (~{_more_rounds(m.extra_rounds)})" if m.verdict == "inconclusive" and m.extra_rounds else ""
        )
        unit = f" ({printable(m.unit)})" if m.unit else ""
        rows.append(
            (
                f"{m.name}{unit}{_qualifiers(m, printable)}",
                number(m.base_center),
                number(m.head_center),
                percent(m.change),
                interval,
                verdict,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(r[:5], widths, strict=True))
        )
        + "  "
        + r[5]
        for r in rows
    ]
