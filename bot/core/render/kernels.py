"""The kernel diff (`bot.core.judge.profile.ProfileDiff`) as a collapsible Markdown table for the PR
comment and `perfbot compare --format markdown`, and as lines for the terminal.

Where the profiled pass recorded the repository's frames, each kernel that changed names the lines
that launched it (the head's; the base's for a kernel that vanished), and, given the change's
`ChangedLines`, marks a line the change touched as such and no other: an unmarked line is code the
change left alone (the cause can still be the change: a default it changed, a caller's argument).

Kernel names and frames come from the results file (untrusted): they are shown as code spans
(`markdown.code`) or made printable, and the tables are bounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.core.judge.profile import FamilyTime, KernelChange, LaunchSite, ProfileDiff, short_name, summary
from bot.core.judge.quantities import number
from bot.core.render.markdown import code, escape_html_text, escape_md
from bot.core.risk import diff as unified_diff
from bot.core.text import clip, printable

MAX_KERNEL_ROWS = 25

_CHANGE_WORDS = {"appeared": "🆕 appeared", "vanished": "➖ vanished", "calls": "calls per step"}


@dataclass(frozen=True)
class ChangedLines:
    """The lines a change touched, per path: ``head``, the lines it added or rewrote (the head's
    numbers); ``base``, the lines it removed or rewrote (the base's numbers), or None where the base's
    numbers are unknown (a pull request's diff is from the merge base, which need not be the base
    measured): no base line is then said to have changed. ``by`` names the change in the marks
    ("this PR", "the diff")."""

    head: Mapping[str, frozenset[int]]
    base: Mapping[str, frozenset[int]] | None = None
    by: str = "this PR"  # what made the change, as the marks name it

    def touches(self, site: LaunchSite, side: str) -> bool:
        lines = self.head if side == "head" else self.base
        return lines is not None and site.line in lines.get(site.path, frozenset())


def changed_lines(diff_text: str, base_numbers: bool = True, by: str = "this PR") -> ChangedLines:
    """The `ChangedLines` of a unified diff (``git diff BASE HEAD``, a pull request's diff);
    ``base_numbers``: whether its old side is the base that was measured; ``by``: what made it."""
    head: dict[str, set[int]] = {}
    base: dict[str, set[int]] = {}
    for change in unified_diff.parse(diff_text).files:
        old_path = change.old_path or change.path
        for hunk in change.hunks:
            old, new = hunk.source_start, hunk.target_start
            for kind in hunk.types:
                if kind == "+":
                    head.setdefault(change.path, set()).add(new)
                    new += 1
                elif kind == "-":
                    base.setdefault(old_path, set()).add(old)
                    old += 1
                elif kind == " ":
                    old, new = old + 1, new + 1
    return ChangedLines(
        {p: frozenset(v) for p, v in head.items()},
        {p: frozenset(v) for p, v in base.items()} if base_numbers else None,
        by,
    )


def kernels_markdown(d: ProfileDiff, changed: ChangedLines | None = None) -> str:
    """``<details>``: the summary line, the families' time per step, the kernels that changed (and
    the lines that launched them, those ``changed`` holds marked as changed)."""
    device = "GPU kernels" if d.head.device == "cuda" else "CPU operators"
    lines = [
        f"<details><summary>Kernels ({device}, one profiled pass per side, not timed): "
        f"{escape_html_text(summary(d))}</summary>",
        "",
        f"Profiled after the timed rounds: {escape_md(clip(d.head.what, 100))}, base "
        f"{d.base.steps} and head {d.head.steps} steps; a step took base {_us(d.base.span_us())} → "
        f"head {_us(d.head.span_us())} under the profiler.",
        "",
        "| family | base µs/step | head µs/step | change |",
        "|---|---:|---:|---|",
    ]
    lines += [_family_row(f, f.label) for f in d.families]
    if d.idle is not None:
        idle = (
            "host gaps (GPU idle within a step)"
            if d.head.device == "cuda"
            else "outside operators (Python, waits)"
        )
        lines.append(_family_row(d.idle, idle))
    if d.kernels:
        shown = d.kernels[:MAX_KERNEL_ROWS]
        sited = any(k.sites for k in shown)
        header = "| kernel | family | calls/step base → head | µs/step base → head | what |"
        lines += [
            "",
            header + (" launched by |" if sited else ""),
            "|---|---|---:|---:|---|" + ("---|" if sited else ""),
        ]
        for k in shown:
            launched = f" {_launched_markdown(k, changed)} |" if sited else ""
            lines.append(
                f"| `{code(short_name(k.name))}` | {k.family} | {_calls(k)} | "
                f"{number(k.base_us)} → {number(k.head_us)} | {_CHANGE_WORDS[k.change]} |{launched}"
            )
        if len(d.kernels) > MAX_KERNEL_ROWS:
            lines.append(
                f"\n…and {len(d.kernels) - MAX_KERNEL_ROWS} more kernels that changed "
                "(`perfbot compare --format json` lists them all)."
            )
        if sited:
            lines.append("\n" + _launch_note(changed))
    lines += [f"\n> **Note:** {escape_md(clip(n, 300))}" for n in d.notes]
    lines.append(
        "\nA family's time counts as moved at 1% of the step and 10% of its own time; "
        "call counts are exact. The profile explains the timed rounds; the verdict comes from them."
    )
    return "\n".join(lines + ["", "</details>"])


def _launched_markdown(k: KernelChange, changed: ChangedLines | None) -> str:
    if not k.sites:
        return "–"
    cells = []
    for site in k.sites:
        mark = f" ✏️ changed by {escape_md(changed.by)}" if changed and changed.touches(site, k.side) else ""
        cells.append(f"`{code(clip(site.where, 120, keep='ends'))}` `{code(clip(site.function, 80))}`{mark}")
    return "<br>".join(cells)


def _launch_note(changed: ChangedLines | None) -> str:
    base = (
        "The repository's line that launched each kernel: the innermost call its code made (the "
        "head's; the base's for a kernel that vanished), from the profiled pass's Python stacks."
    )
    if changed is None:
        return base
    return (
        f"{base} ✏️ marks a line {escape_md(changed.by)} changed; an unmarked line is code it left alone, "
        "though the cause can still be the change (a default it changed, an argument a caller passes)."
    )


def _family_row(f: FamilyTime, label: str) -> str:
    change = f"**{_signed(f.head_us - f.base_us)}**" if f.moved else _signed(f.head_us - f.base_us)
    return f"| {label} | {number(f.base_us)} | {number(f.head_us)} | {change} |"


def _calls(k: KernelChange) -> str:
    return f"{number(k.base_calls)} → {number(k.head_calls)}"


def _signed(us: float) -> str:
    return "±0" if abs(us) < 0.05 else f"{us:+,.1f}"


def _us(us: float) -> str:
    return f"{us / 1000:.3f} ms" if us >= 1000 else f"{us:.1f} µs"


def kernels_text(d: ProfileDiff, changed: ChangedLines | None = None) -> list[str]:
    """The same for a terminal: the summary, the families that moved, the kernels that changed and
    the lines that launched them."""
    lines = [f"kernels (one profiled pass per side, not timed): {printable(summary(d))}"]
    rows = [(f.label, f) for f in d.families]
    if d.idle is not None:
        rows.append(("host gaps" if d.head.device == "cuda" else "outside operators", d.idle))
    width = max(len(label) for label, _ in rows) if rows else 0
    lines += [
        f"  {label.ljust(width)}  {number(f.base_us):>9} -> {number(f.head_us):>9} us/step"
        f"{'  (moved)' if f.moved else ''}"
        for label, f in rows
    ]
    for k in d.kernels[:MAX_KERNEL_ROWS]:
        lines.append(
            f"  {k.change:>9}  {printable(short_name(k.name, 70))} [{k.family}]: calls/step "
            f"{number(k.base_calls)} -> {number(k.head_calls)}, us/step {number(k.base_us)} -> "
            f"{number(k.head_us)}"
        )
        for site in k.sites:
            touched = changed is not None and changed.touches(site, k.side)
            mark = f" (changed by {printable(changed.by)})" if changed is not None and touched else ""
            lines.append(
                f"             launched by {printable(clip(site.where, 120, keep='ends'))} "
                f"{printable(clip(site.function, 80))}, {number(site.calls)}/step{mark}"
            )
    if len(d.kernels) > MAX_KERNEL_ROWS:
        lines.append(f"  ...and {len(d.kernels) - MAX_KERNEL_ROWS} more kernels that changed")
    lines += [f"  note: {printable(clip(n, 300))}" for n in d.notes]
    return lines
