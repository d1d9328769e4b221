"""What a regression case says where people look: the comment on its culprit's pull request (or
commit), the optional issue's title and body, and the lines of a case that was not reproduced.

Everything that did not come from the bot (a commit subject, a suite or metric name) is shown in a
code span, where GitHub neither formats, links nor notifies, also in the issue's title; the bisect's
own Markdown (its kernel table) was rendered by perfbot from a checked report.

The bisect's ``ci`` is the 95% interval of the confirmation's ratio (culprit / parent,
`bot.core.bench.bisect_artifact.BisectOutcome.ci`); it is shown as a change (ratio - 1), as the
change beside it is."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.judge.quantities import percent
from bot.core.render.markdown import code as code
from bot.core.render.markdown import escape_md as escape_md

MARKER = "<!-- perfbot:regression:{key} -->"
# In the issue, which one culprit keeps however many of its cases update it.
ISSUE_MARKER = "<!-- perfbot:culprit:{sha} -->"
MAX_KERNELS = 20_000  # characters of the kernel table kept in a comment


@dataclass(frozen=True)
class Culprit:
    """A confirmed culprit, as a comment names it."""

    key: str  # the case's
    suite: str
    metric: str
    good: str
    bad: str
    source: str  # what found the regression: merge | changepoint | command
    culprit: str
    subject: str | None
    change: str | None  # "+12.3%" of the confirmation
    ci: tuple[float, float] | None  # the confirmation's 95% interval of the ratio culprit / parent
    commits: int
    runs: int
    run_url: str | None
    found_by_url: str | None  # the run that found the regression, when known
    kernels_markdown: str | None


_FOUND_BY = {
    "merge": "a merge run on the default branch",
    "changepoint": "a change point of the default branch's history",
    "command": "`/bench bisect`",
}


def marker(key: str) -> str:
    return MARKER.format(key=key)


def span(text: str) -> str:
    """Untrusted text as an inline code span: one line, its backticks made quotes; never empty."""
    inside = code(text).replace("\\|", "|").strip() or "?"
    return f"`{inside}`"


def interval(ci: tuple[float, float]) -> str:
    """The ratio's interval as the change it stands for: (1.075, 1.094) is +7.5% to +9.4%."""
    return f"95% interval of the change {percent(ci[0] - 1)} to {percent(ci[1] - 1)}"


def culprit_comment(culprit: Culprit) -> str:
    """The comment on the culprit's pull request (or commit)."""
    metric = span(culprit.metric) if culprit.metric else "the headline metric"
    change = f" by **{escape_md(culprit.change)}**" if culprit.change else ""
    shown_interval = f" ({interval(culprit.ci)})" if culprit.ci is not None else ""
    subject = f" ({span(culprit.subject)})" if culprit.subject else ""
    links = [
        f"[the bisect run]({culprit.run_url})" if culprit.run_url else "",
        f"[the run that found it]({culprit.found_by_url})" if culprit.found_by_url else "",
    ]
    short = span(culprit.culprit[:12])
    lines = [
        marker(culprit.key),
        f"### perfbot: a confirmed regression of {span(culprit.suite)} bisected to {short}",
        "",
        f"Bisected on the project's benchmark runners, commit {short}{subject} changed {metric}{change}"
        f"{shown_interval} against its parent: a regression, confirmed by re-measuring the two.",
        "",
        f"- Found by {_FOUND_BY.get(culprit.source, 'perfbot')} between {span(culprit.good[:12])} (good) and "
        f"{span(culprit.bad[:12])} (bad); {_count(culprit.commits, 'commit')} bisected in "
        f"{_count(culprit.runs, 'benchmark run')}.",
    ]
    shown = [link for link in links if link]
    if shown:
        lines.append("- Runs: " + " · ".join(shown))
    if culprit.kernels_markdown:
        kernels = culprit.kernels_markdown[:MAX_KERNELS]
        lines += ["", "<details><summary>Kernels that changed</summary>", "", kernels, "", "</details>"]
    return "\n".join(lines) + "\n"


def issue_title(suite: str, metric: str, culprit: str) -> str:
    """The issue's title, every name in a code span (GitHub renders them in titles too)."""
    names = " ".join(span(name[:100]) for name in (suite, metric) if name)
    return f"perfbot: regression of {names} bisected to {span(culprit[:12])}"


def issue_marker(sha: str) -> str:
    return ISSUE_MARKER.format(sha=sha)


def issue_body(culprit: Culprit, comment_url: str | None) -> str:
    where = f"\n\nNamed on the culprit: {comment_url}" if comment_url else ""
    return culprit_comment(culprit) + where + "\n" + issue_marker(culprit.culprit) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
