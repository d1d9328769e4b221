"""The kernel diff (`bot.core.judge.profile.ProfileDiff`) as a collapsible Markdown table for the PR
comment and `perfbot compare --format markdown`, and as lines for the terminal.

Kernel names come from the results file (untrusted): they are shown as code spans (`markdown.code`)
or made printable, and the tables are bounded.
"""

from __future__ import annotations

from bot.core.judge.profile import FamilyTime, KernelChange, ProfileDiff, short_name, summary
from bot.core.judge.quantities import number
from bot.core.render.markdown import code, escape_html_text, escape_md
from bot.core.text import clip, printable

MAX_KERNEL_ROWS = 25

_CHANGE_WORDS = {"appeared": "🆕 appeared", "vanished": "➖ vanished", "calls": "calls per step"}


def kernels_markdown(d: ProfileDiff) -> str:
    """``<details>``: the summary line, the families' time per step, the kernels that changed."""
    device = "GPU kernels" if d.head.device == "cuda" else "CPU operators"
    lines = [f"<details><summary>Kernels ({device}, one profiled pass per side, not timed): "
             f"{escape_html_text(summary(d))}</summary>", "",
             f"Profiled after the timed rounds: {escape_md(clip(d.head.what, 100))}, base "
             f"{d.base.steps} and head {d.head.steps} steps; a step took base {_us(d.base.span_us())} → "
             f"head {_us(d.head.span_us())} under the profiler.", "",
             "| family | base µs/step | head µs/step | change |", "|---|---:|---:|---|"]
    lines += [_family_row(f, f.label) for f in d.families]
    if d.idle is not None:
        idle = "host gaps (GPU idle within a step)" if d.head.device == "cuda" else \
            "outside operators (Python, waits)"
        lines.append(_family_row(d.idle, idle))
    if d.kernels:
        lines += ["", "| kernel | family | calls/step base → head | µs/step base → head | what |",
                  "|---|---|---:|---:|---|"]
        for k in d.kernels[:MAX_KERNEL_ROWS]:
            lines.append(f"| `{code(short_name(k.name))}` | {k.family} | {_calls(k)} | "
                         f"{number(k.base_us)} → {number(k.head_us)} | {_CHANGE_WORDS[k.change]} |")
        if len(d.kernels) > MAX_KERNEL_ROWS:
            lines.append(f"\n…and {len(d.kernels) - MAX_KERNEL_ROWS} more kernels that changed "
                         "(`perfbot compare --format json` lists them all).")
    lines += [f"\n> **Note:** {escape_md(clip(n, 300))}" for n in d.notes]
    lines.append("\nA family's time counts as moved at 1% of the step and 10% of its own time; "
                 "call counts are exact. The profile explains the timed rounds; the verdict comes from them.")
    return "\n".join(lines + ["", "</details>"])


def _family_row(f: FamilyTime, label: str) -> str:
    change = f"**{_signed(f.head_us - f.base_us)}**" if f.moved else _signed(f.head_us - f.base_us)
    return f"| {label} | {number(f.base_us)} | {number(f.head_us)} | {change} |"


def _calls(k: KernelChange) -> str:
    return f"{number(k.base_calls)} → {number(k.head_calls)}"


def _signed(us: float) -> str:
    return "±0" if abs(us) < 0.05 else f"{us:+,.1f}"


def _us(us: float) -> str:
    return f"{us / 1000:.3f} ms" if us >= 1000 else f"{us:.1f} µs"


def kernels_text(d: ProfileDiff) -> list[str]:
    """The same for a terminal: the summary, the families that moved, the kernels that changed."""
    lines = [f"kernels (one profiled pass per side, not timed): {printable(summary(d))}"]
    rows = [(f.label, f) for f in d.families]
    if d.idle is not None:
        rows.append(("host gaps" if d.head.device == "cuda" else "outside operators", d.idle))
    width = max(len(label) for label, _ in rows) if rows else 0
    lines += [f"  {label.ljust(width)}  {number(f.base_us):>9} -> {number(f.head_us):>9} us/step"
              f"{'  (moved)' if f.moved else ''}" for label, f in rows]
    for k in d.kernels[:MAX_KERNEL_ROWS]:
        lines.append(f"  {k.change:>9}  {printable(short_name(k.name, 70))} [{k.family}]: calls/step "
                     f"{number(k.base_calls)} -> {number(k.head_calls)}, us/step {number(k.base_us)} -> "
                     f"{number(k.head_us)}")
    if len(d.kernels) > MAX_KERNEL_ROWS:
        lines.append(f"  ...and {len(d.kernels) - MAX_KERNEL_ROWS} more kernels that changed")
    lines += [f"  note: {printable(clip(n, 300))}" for n in d.notes]
    return lines
