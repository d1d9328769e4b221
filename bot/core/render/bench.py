"""What the bot says about benchmarks: the benchmark section of the sticky comment, the
`perfbot / bench` check run's title and summary, and the replies to `/bench` commands.

The section is bounded (`SECTION_BUDGET`) so that the risk review above it keeps its room under
GitHub's comment limit; every text that came from outside the bot is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.core.render.markdown import code, escape_md, fit, link_target
from bot.core.text import clip
from bot.core.vocabulary import VERDICT_ICONS, VERDICTS_WORST_FIRST

SECTION_BUDGET = 30_000
MAX_PROBLEMS = 8
MAX_TEXT = 300

_ENDED = {
    "failure": ("❌", "The benchmark run failed"),
    "cancelled": ("⏹️", "The benchmark run was cancelled"),
    "timed_out": ("⌛", "The benchmark run timed out"),
    "startup_failure": ("❌", "The benchmark workflow could not start"),
    "action_required": ("⏸️", "The benchmark run waits for a maintainer's approval in GitHub Actions"),
    "stale": ("⏹️", "The benchmark run went stale"),
}


@dataclass(frozen=True)
class SuiteResult:
    """One judged suite: its verdict, its one-line headline and the rendered comparison."""

    suite: str
    verdict: str
    headline: str
    markdown: str


@dataclass(frozen=True)
class BenchSection:
    """The latest benchmark of a pull request, as the sticky comment shows it.

    ``status``: requested | dispatching | running | completed | failed | cancelled | superseded,
    or outdated (it measured an earlier head of the pull request). ``conclusion``: the workflow
    run's, once it ended. ``error``: why the bot could not start it or read its results.
    """

    status: str
    base_sha: str
    head_sha: str
    suites: tuple[str, ...]
    trigger: str
    requested_by: str | None = None
    run_url: str | None = None
    conclusion: str | None = None
    error: str | None = None
    results: tuple[SuiteResult, ...] = ()
    problems: tuple[str, ...] = field(default=())

    @property
    def verdict(self) -> str | None:
        """The worst verdict of the suites (regression first), None before there are results."""
        verdicts = {r.verdict for r in self.results}
        return next((v for v in VERDICTS_WORST_FIRST if v in verdicts), None)


def section_markdown(section: BenchSection) -> str:
    """The benchmark section of the sticky comment."""
    blocks = [_status_block(section)]
    if section.status == "completed":
        blocks += [r.markdown for r in section.results]
    blocks.append(_problems_block(section.problems))
    return fit(blocks, SECTION_BUDGET)


def _status_block(section: BenchSection) -> str:
    what = (
        f"suites {', '.join(f'`{code(clip(s, 64))}`' for s in section.suites)} · base "
        f"`{code(section.base_sha[:12])}` → head `{code(section.head_sha[:12])}` · {_who(section)}"
    )
    target = link_target(section.run_url) if section.run_url else None
    run = f"[workflow run]({target})" if target else None
    if section.status == "superseded":
        line = (
            f"⏭️ **Benchmark superseded:** a newer push replaced head `{code(section.head_sha[:12])}` "
            "before its benchmark finished, so it was cancelled. Comment `/bench` to measure the "
            "new head."
        )
    elif section.status == "outdated":
        verdict = f" (verdict: {escape_md(section.verdict)})" if section.verdict else ""
        line = (
            f"🕰️ The last benchmark measured an earlier head, `{code(section.head_sha[:12])}`{verdict}. "
            "Comment `/bench` to measure this one."
        )
    elif section.status in ("requested", "dispatching", "running"):
        where = f"see the {run}" if run else "the workflow run is linked here once GitHub starts it"
        line = f"⏳ **Benchmarks are running** on the GPU runners: {where}."
    elif section.status == "completed" and section.results:
        verdict = section.verdict or "error"
        line = f"**Benchmark verdict: {VERDICT_ICONS[verdict]} {verdict}**" + (f" ({run})" if run else "")
    elif section.status == "cancelled" and section.conclusion is None:
        line = "⏹️ **Benchmark cancelled** before it finished: no verdict. Comment `/bench` to start another."
    else:
        line = _ended_line(section, run)
    return f"### ⏱️ Benchmarks\n\n{line}\n\n<sub>{what}</sub>"


def _ended_line(section: BenchSection, run: str | None) -> str:
    icon, text = _ENDED.get(section.conclusion or "", ("❌", "The benchmark did not produce a verdict"))
    if section.conclusion is None and section.error:
        icon, text = "❌", "perfbot could not start the benchmark"
    link = f" ({run})" if run else ""
    reason = f": {escape_md(clip(section.error, MAX_TEXT))}" if section.error else ""
    return (
        f"{icon} **{text}**{link}{reason}. No verdict: the benchmark did not complete, so nothing is "
        "claimed about this change."
    )


def _who(section: BenchSection) -> str:
    if section.trigger == "command" and section.requested_by:
        return f"requested by `{code(clip(section.requested_by, 40))}` with `/bench`"
    if section.trigger == "auto":
        return "started automatically for this risk level"
    return "requested"


def _problems_block(problems: Sequence[str]) -> str:
    lines = [f"> **Problem:** {escape_md(clip(p, MAX_TEXT))}" for p in problems[:MAX_PROBLEMS]]
    if len(problems) > MAX_PROBLEMS:
        lines.append(f"> …and {len(problems) - MAX_PROBLEMS} more problems.")
    return "\n>\n".join(lines)


def check_title(section: BenchSection) -> str:
    """The `perfbot / bench` check run's title: the state, or the verdict and its headline."""
    if section.status == "superseded":
        return "Superseded by a newer push"
    if section.status in ("requested", "dispatching", "running"):
        return "Benchmarks running"
    verdict = section.verdict
    if section.status == "completed" and verdict is not None:
        first = next(r for r in section.results if r.verdict == verdict)
        label = {
            "regression": "Regression",
            "improvement": "Improvement",
            "unchanged": "No change",
            "inconclusive": "Inconclusive",
            "error": "No verdict",
        }[verdict]
        return clip(f"{label}: {first.headline}", 200)
    if section.status == "cancelled" and section.conclusion is None:
        return "Benchmark cancelled"
    _, text = _ENDED.get(section.conclusion or "", ("", "No verdict"))
    if section.conclusion is None:
        return "The benchmark could not start: no verdict"
    return clip(f"{text}: no verdict", 200)


# ---------------------------------------------------------------- replies

HELP = """\
**perfbot benchmarks** — comment one of these on its own line:

| command | what it does |
|---|---|
| `/bench` | benchmark base against head on the GPU runners ({suites}) |
| `/bench SUITE ...` | only these suites ({known}) |
| `/bench --rounds N` · `--max-rounds N` | rounds per side (at most {cap}); adaptive rounds up to N |
| `/bench cancel` | stop this pull request's running benchmark (and the bisects asked for here) |
| `/bench bisect GOOD BAD [SUITE ...] [--metric M]` | bisect a regression between two default-branch commits |
| `/bench dismiss CASE [REASON]` | end a regression case of the default branch as noise or known |
| `/bench approve [SHA]` | let the fork head you read (or SHA) reach the GPU runners, until the next push |
| `/bench ack REASON` | acknowledge a flagged regression |
| `/bench help` | this table |

Only people with write access can start benchmarks; the base is always the pull request's base."""


def help_reply(default_suites: Sequence[str], known: Sequence[str], cap: int) -> str:
    return HELP.format(
        suites=", ".join(f"`{code(s)}`" for s in default_suites),
        known=", ".join(f"`{code(s)}`" for s in known),
        cap=cap,
    )


def refusal_reply(reason: str, hint: str) -> str:
    """One short reply: why nothing was started, and what to do instead (both escaped)."""
    return f"😕 **Not started:** {escape_md(clip(reason, MAX_TEXT))}.\n\n{escape_md(clip(hint, MAX_TEXT))}."


def stale_approval_reply(approved: str, head: str) -> str:
    """The answer to an approval of a head that is no longer the pull request's head."""
    return (
        f"👍 Approved `{code(approved[:12])}` for the GPU runners, but the head is now "
        f"`{code(head[:12])}`: it was pushed after the commit you approved, and is not approved. "
        f"Read it, then comment `/bench approve {code(head[:12])}` to approve it too."
    )


def failure_note(event: str, error: str) -> str:
    """The note left on a pull request when perfbot gave up on one of its events."""
    return (
        f"⚠️ **perfbot could not process a `{code(clip(event, 40))}` event of this pull request** "
        f"and stopped retrying: {escape_md(clip(error, MAX_TEXT))}. The operator's logs have the "
        "details; a new push or command tries again."
    )
