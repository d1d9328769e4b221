"""Read the artifact of a bisection the App dispatched (`perfbot bisect --artifact`) as untrusted input.

``files`` are the artifact's top-level files (`bot.core.bench.artifact.read`, already size-capped):
``bisect.json`` (the report), ``reference.results.json`` (GOOD against BAD, measured in that run) and,
with a culprit, ``confirm.results.json`` (the culprit against its parent). `read` validates all of
it: the report's schema and status, every sha 40 hex digits, and GOOD, BAD and the suite EQUAL to
those the App dispatched; the results files must measure the commits the report says they do. Any
mismatch is a problem line and no outcome. Nothing raises on bad data.

A culprit is believed only where the report places it in GOOD..BAD: its ``range`` (the commits
bisected, oldest first, written by `perfbot bisect --artifact`) must end at BAD, leave GOOD out,
count ``commits`` and hold the culprit and every commit measured (a parent may lie before GOOD);
a report whose range does not is refused whole. A report without a range (from runners before
it) cannot place its culprit: `UNPLACED_CULPRIT_BELIEVED` says whether it is believed all the same.

The outcome's Markdown is rendered here from the validated report, never taken from the artifact's
``summary.md`` (text the runner wrote, where the code under test ran): every string in it is escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.core.bisect.report import (
    CONFIRM_RESULTS,
    MAX_FINGERPRINT_KEY,
    MAX_FINGERPRINT_VALUE,
    REFERENCE_RESULTS,
    STATUSES,
    Status,
)
from bot.core.judge import profile
from bot.core.judge import results as results_file
from bot.core.judge.quantities import percent
from bot.core.render.kernels import kernels_markdown
from bot.core.render.markdown import code, escape_md
from bot.core.text import clip, printable

REPORT = "bisect.json"
SHA = r"^[0-9a-f]{40}$"
MAX_FINGERPRINT_KEYS = results_file.MAX_FINGERPRINT_LEAVES
MAX_MEASUREMENTS = 200
FINGERPRINT_ROWS = 120
MAX_RANGE = 20_000  # commits a report may list (about 0.9 MB of JSON); a wider range is no bisect's
# Whether a culprit named by a report that lists no range is still believed, as before ranges were
# written: True while `perfbot bisect --artifact` does not yet pass its range to
# `bot.runner.bisect_artifact.write` (bot/cli/bisect.py); once it does, False: such a culprit is refused.
UNPLACED_CULPRIT_BELIEVED = True
_CULPRIT_STATUSES = ("confirmed", "likely")
_NO_CULPRIT_STATUSES = ("not_reproduced", "error")

Sha = Annotated[str, Field(pattern=SHA)]
Text = Annotated[str, Field(max_length=2000)]
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")]
Metric = Annotated[str, Field(max_length=128)]
Ratio = Annotated[float, Field(allow_inf_nan=False)]
FingerprintKey = Annotated[str, Field(max_length=MAX_FINGERPRINT_KEY)]
FingerprintValue = Annotated[str, Field(max_length=MAX_FINGERPRINT_VALUE)]


@dataclass(frozen=True)
class BisectOutcome:
    """What a bisection found, as the App stores and shows it."""

    status: str
    good: str
    bad: str
    suite: str
    metric: str
    commits: int
    culprit: str | None
    culprit_subject: str | None
    parent: str | None
    change: str | None  # the confirmation's change of the metric, e.g. "+12.3%"
    ci: tuple[float, float] | None  # the confirmation's 95% interval of the ratio
    reference_verdict: str
    reference_change: str | None
    runs: int  # benchmark runs made
    markdown: str
    fingerprints: dict[str, dict[str, str]]  # "good"/"bad" -> flattened fingerprint
    kernels_markdown: str | None  # the confirmation's kernel diff, if both sides were profiled


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", strict=False)


class _Culprit(_Model):
    sha: Sha
    subject: Text = ""
    parent: Sha | None = None


class _Reference(_Model):
    verdict: Annotated[str, Field(max_length=32)]
    ratio: Ratio | None = None
    ci: tuple[Ratio, Ratio] | None = None


class _Measurement(_Model):
    purpose: Literal["reference", "probe", "confirm", "recheck"]
    base: Sha
    head: Sha
    outcome: Literal["ok", "bad", "skipped"] | None = None
    verdict: Annotated[str, Field(max_length=32)]
    ratio: Ratio | None = None
    ci: tuple[Ratio, Ratio] | None = None
    results: Annotated[str, Field(max_length=300)] = ""


class _Runs(_Model):
    total: Annotated[int, Field(ge=0, le=10_000)]


class _Fingerprints(_Model):
    good: dict[FingerprintKey, FingerprintValue] = {}
    bad: dict[FingerprintKey, FingerprintValue] = {}

    @field_validator("good", "bad")
    @classmethod
    def _bounded(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_FINGERPRINT_KEYS:
            raise ValueError(f"more than {MAX_FINGERPRINT_KEYS} fingerprint keys")
        return value


class _Report(_Model):
    schema_: Literal[1] = Field(alias="schema")
    status: Status
    good: Sha
    bad: Sha
    suite: Name
    metric: Metric
    commits: Annotated[int, Field(ge=0, le=10_000_000)]
    range: Annotated[list[Sha], Field(max_length=MAX_RANGE)] | None = None  # oldest first
    culprit: _Culprit | None = None
    conclusion: Text
    runs: _Runs
    reference: _Reference | None = None
    measurements: Annotated[list[_Measurement], Field(max_length=MAX_MEASUREMENTS)] = []
    fingerprints: _Fingerprints = _Fingerprints()


def read(
    files: Mapping[str, bytes], *, good: str, bad: str, suite: str
) -> tuple[BisectOutcome | None, list[str]]:
    """The outcome of the bisection of ``good``..``bad`` on ``suite`` that ``files`` hold, and the
    problems found (one line each); no outcome when the report is missing, invalid or about other
    commits or another suite."""
    problems: list[str] = []
    report = _report(files.get(REPORT), problems)
    if report is None:
        return None, problems
    asked = {"GOOD": (report.good, good), "BAD": (report.bad, bad), "suite": (report.suite, suite)}
    for what, (found, wanted) in asked.items():
        if found != wanted:
            problems.append(f"{REPORT}: {what} is {_short(found)}, not the {_short(wanted)} dispatched")
    if problems:
        return None, problems
    if report.status in _CULPRIT_STATUSES and report.culprit is None:
        return None, [f"{REPORT}: status {report.status} names no culprit"]
    if report.status in _NO_CULPRIT_STATUSES and report.culprit is not None:
        return None, [f"{REPORT}: status {report.status} cannot name a culprit"]
    misplaced = _misplaced(report)
    if misplaced:
        return None, [f"{REPORT}: {problem}" for problem in misplaced]
    if report.culprit is not None and report.range is None and not UNPLACED_CULPRIT_BELIEVED:
        return None, [
            f"{REPORT}: lists no commits of GOOD..BAD, so its culprit {report.culprit.sha[:10]} "
            "cannot be placed in the range"
        ]
    confirmation = _confirmation(report)
    reference = _results(files, REFERENCE_RESULTS, (report.good, report.bad), report.suite, problems)
    confirmed = (
        _results(files, CONFIRM_RESULTS, (confirmation.base, confirmation.head), report.suite, problems)
        if confirmation is not None
        else None
    )
    if problems:
        return None, problems
    if reference is None and report.status != "error":
        problems.append(f"the artifact holds no {REFERENCE_RESULTS}")
    diff = profile.diff_of(confirmed.base.profile, confirmed.head.profile) if confirmed is not None else None
    culprit = report.culprit
    outcome = BisectOutcome(
        status=report.status,
        good=report.good,
        bad=report.bad,
        suite=report.suite,
        metric=_plain(report.metric, 128),
        commits=report.commits,
        culprit=culprit.sha if culprit else None,
        culprit_subject=_plain(culprit.subject, 200) if culprit else None,
        parent=(culprit.parent or report.good) if culprit else None,
        change=_change(confirmation.ratio) if confirmation else None,
        ci=confirmation.ci if confirmation else None,
        reference_verdict=report.reference.verdict if report.reference else "error",
        reference_change=_change(report.reference.ratio) if report.reference else None,
        runs=_runs_made(report),
        markdown=_markdown(report, confirmation),
        fingerprints={"good": dict(report.fingerprints.good), "bad": dict(report.fingerprints.bad)},
        kernels_markdown=kernels_markdown(diff) if diff is not None else None,
    )
    return outcome, problems


def _misplaced(report: _Report) -> list[str]:
    """Where the report's range contradicts GOOD..BAD or its own culprit and runs (one line each)."""
    if report.range is None:
        return []
    listed = report.range
    index = {sha: at for at, sha in enumerate(listed)}
    found = []
    if not listed or listed[-1] != report.bad:
        found.append(f"its range does not end at BAD {report.bad[:10]}")
    if report.good in index:
        found.append(f"its range holds GOOD {report.good[:10]}")
    if len(index) != len(listed) or len(listed) != report.commits:
        found.append(
            f"its range lists {len(listed)} commits ({len(index)} distinct), not the {report.commits} it says"
        )
    # (A culprit's parent may lie before GOOD: an inner commit of a branch forked earlier.)
    if report.culprit is not None and report.culprit.sha not in index:
        found.append(f"its culprit {report.culprit.sha[:10]} is not a commit of GOOD..BAD")
    for m in report.measurements:
        if m.purpose != "reference" and m.head not in index:
            found.append(f"its {m.purpose} run measured {m.head[:10]}, not a commit of GOOD..BAD")
    return found


def _runs_made(report: _Report) -> int:
    """Benchmark runs made: one per results file, where the measurements name them (a confirmation
    taken from a probe or the reference is listed twice but was run once)."""
    files = {m.results for m in report.measurements if m.results}
    return len(files) if files else report.runs.total


def _report(data: bytes | None, problems: list[str]) -> _Report | None:
    if data is None:
        problems.append(f"the artifact holds no {REPORT}")
        return None
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        problems.append(f"{REPORT}: not UTF-8 JSON")
        return None
    if not isinstance(parsed, dict):
        problems.append(f"{REPORT}: the top level must be a JSON object")
        return None
    if parsed.get("schema") != 1 or isinstance(parsed.get("schema"), bool):
        problems.append(
            f"{REPORT}: unsupported schema {_short(repr(parsed.get('schema')))} (this perfbot reads 1)"
        )
        return None
    if parsed.get("status") not in STATUSES:
        problems.append(
            f"{REPORT}: status {_short(repr(parsed.get('status')))} is none of {', '.join(STATUSES)}"
        )
        return None
    try:
        return _Report.model_validate(parsed)
    except ValidationError as error:
        problems.append(f"{REPORT}: {results_file.problem(error)}")
        return None
    except RecursionError:
        problems.append(f"{REPORT}: JSON nested too deeply")
        return None


def _confirmation(report: _Report) -> _Measurement | None:
    """The culprit's run against its parent (the last one), when there is a culprit."""
    if report.culprit is None:
        return None
    parent = report.culprit.parent or report.good
    return next(
        (
            m
            for m in reversed(report.measurements)
            if m.purpose == "confirm" and (m.base, m.head) == (parent, report.culprit.sha)
        ),
        None,
    )


def _results(
    files: Mapping[str, bytes], name: str, shas: tuple[str, str], suite: str, problems: list[str]
) -> results_file.Results | None:
    """The results file ``name``, if there, checked to measure ``shas`` (base, head) on ``suite``."""
    data = files.get(name)
    if data is None:
        return None
    try:
        loaded = results_file.load(data, name)
    except results_file.ResultsError as error:
        problems.append(_plain(str(error), 300))
        return None
    except RecursionError:
        problems.append(f"{name}: JSON nested too deeply")
        return None
    if (loaded.base.sha.lower(), loaded.head.sha.lower()) != shas or loaded.suite != suite:
        problems.append(
            f"{name}: measured {_short(loaded.base.sha)}..{_short(loaded.head.sha)} on "
            f"{_short(loaded.suite)}, not {shas[0][:10]}..{shas[1][:10]} on {suite}"
        )
        return None
    return loaded


def _markdown(report: _Report, confirmation: _Measurement | None) -> str:
    """The report as Markdown, every string from the artifact escaped."""
    lines = [
        f"### perfbot bisect: {escape_md(_plain(report.conclusion, 300))}",
        "",
        f"Status: **{report.status.replace('_', ' ')}**. Range `{report.good[:10]}..{report.bad[:10]}` "
        f"({report.commits} commits), suite `{code(report.suite)}`, metric `{code(report.metric)}`, "
        f"{_runs_made(report)} benchmark runs.",
        "",
    ]
    if report.culprit is not None:
        lines += [
            f"**Culprit:** `{report.culprit.sha}` {escape_md(_plain(report.culprit.subject, 200))}"
            + (f": {_change(confirmation.ratio)} against its parent" if confirmation else ""),
            "",
        ]
    if report.status in _NO_CULPRIT_STATUSES:
        lines += _fingerprint_table(report.fingerprints)
    if report.measurements:
        lines += ["| run | base | head | verdict | change (95% CI) | outcome |", "|---|---|---|---|---|---|"]
        lines += [
            f"| {m.purpose} | `{m.base[:10]}` | `{m.head[:10]}` | {code(m.verdict)} | "
            f"{_change_ci(m.ratio, m.ci)} | {m.outcome or ''} |"
            for m in report.measurements
        ]
    return "\n".join(lines) + "\n"


def _fingerprint_table(prints: _Fingerprints) -> list[str]:
    keys = sorted(
        prints.good.keys() | prints.bad.keys(), key=lambda k: (prints.good.get(k) == prints.bad.get(k), k)
    )
    if not keys:
        return ["No environment fingerprint was recorded.", ""]
    differing = sum(1 for k in keys if prints.good.get(k) != prints.bad.get(k))
    lines = [
        f"<details><summary>Environment fingerprints of GOOD and BAD, as measured in this run "
        f"({differing} differ)</summary>",
        "",
        "| key | GOOD | BAD | differs |",
        "|---|---|---|---|",
    ]
    for key in keys[:FINGERPRINT_ROWS]:
        g, b = prints.good.get(key), prints.bad.get(key)
        lines.append(
            f"| `{code(clip(key, 120))}` | `{code(clip(g or '–', 200))}` | "
            f"`{code(clip(b or '–', 200))}` | {'yes' if g != b else ''} |"
        )
    if len(keys) > FINGERPRINT_ROWS:
        lines += ["", f"… and {len(keys) - FINGERPRINT_ROWS} more keys."]
    return lines + ["", "</details>", ""]


def _change(ratio: float | None) -> str | None:
    return percent(ratio - 1) if ratio is not None else None


def _change_ci(ratio: float | None, ci: tuple[float, float] | None) -> str:
    if ratio is None:
        return "–"
    return percent(ratio - 1) + (f" ({percent(ci[0] - 1)}..{percent(ci[1] - 1)})" if ci else "")


def _plain(text: str, limit: int) -> str:
    return clip(printable(text), limit)


def _short(value: Any) -> str:
    return _plain(str(value), 40)
