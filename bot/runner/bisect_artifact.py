"""The artifact files of a bisection (`perfbot bisect --artifact DIR`): what the action uploads and
the App reads back (`bot.core.bench.bisect_artifact`).

The folder gets exactly these top-level files:

- ``bisect.json``: the report (`BisectReport.to_dict`), with the results files named as in this
  folder (``reference.results.json``, ``confirm.results.json``) and every other run by its file
  name alone, so that no path of the runner's disk leaves it; and, when given, ``range``: the
  commits of GOOD..BAD bisected, oldest first, where the App places the culprit;
- ``reference.results.json``: the results file of GOOD against BAD measured by this bisection;
- ``confirm.results.json``: the culprit against its parent, when there is a culprit;
- ``summary.md``: the report as Markdown (the job summary).

Each results file is copied from the bytes perfbot wrote: when the run's SHA-256, as recorded when
it was written, no longer matches the file (something rewrote it since), nothing is copied and the
bisection stops with an error. `write` returns the SHA-256 of every file, from the bytes written.
`read_folder` reads such a folder back through the App's reader, for `perfbot bench report`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bot.core.bench import bisect_artifact as reader
from bot.core.bench.artifact import MAX_FILE_BYTES
from bot.core.bisect.report import CONFIRM_RESULTS, REFERENCE_RESULTS, BisectError, BisectReport
from bot.core.render import bisect as render_bisect
from bot.core.render.markdown import escape_md

REPORT = "bisect.json"
SUMMARY = "summary.md"
FILES = (REPORT, REFERENCE_RESULTS, CONFIRM_RESULTS, SUMMARY)


def write(
    report: BisectReport, folder: Path, written: Mapping[Path, str], commits: Sequence[str] | None = None
) -> dict[str, str]:
    """Write the artifact files of ``report`` into ``folder``; their SHA-256 by name. ``written``:
    the SHA-256 of each results file as perfbot wrote it (`bench.BenchOptions.written`);
    ``commits``: GOOD..BAD as bisected (`GitRepo.rev_list`, oldest first), recorded as the range."""
    if commits is not None:
        _check_range(report, commits)
    copies: dict[str, bytes] = {}
    renamed: dict[str, str] = {}
    reference, confirmation = report.reference, report.confirmation if report.culprit else None
    for name, run in ((REFERENCE_RESULTS, reference), (CONFIRM_RESULTS, confirmation)):
        if run is None:
            continue
        data = _results_bytes(Path(run.results_path), written)
        if data is not None:
            copies[name] = data
            # A one-commit range's confirmation is its reference run: one file, named as the reference.
            renamed.setdefault(run.results_path, name)
    named = _named(dict(report.to_dict()), renamed)
    if commits is not None:
        named["range"] = list(commits)
    copies[REPORT] = (json.dumps(named, indent=2, ensure_ascii=False) + "\n").encode()
    copies[SUMMARY] = render_bisect.bisect_markdown(report).encode()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return {name: _write(folder / name, content) for name, content in copies.items()}
    except OSError as error:
        raise BisectError(f"{folder}: cannot write the artifact files ({error.strerror})") from None


def _check_range(report: BisectReport, commits: Sequence[str]) -> None:
    """The range must be the report's: ending at BAD, as many commits, its culprit among them."""
    if not commits or commits[-1] != report.bad or len(commits) != report.commits:
        raise BisectError(f"the range of {len(commits)} commits given is not the report's GOOD..BAD")
    if report.culprit is not None and report.culprit.sha not in commits:
        raise BisectError(f"the culprit {report.culprit.sha[:10]} is not in the range given")


def _results_bytes(path: Path, written: Mapping[Path, str]) -> bytes | None:
    """The results file's bytes, checked against the SHA-256 recorded when perfbot wrote it; None
    when the run left no file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise BisectError(f"{path}: cannot read it for the artifact ({error.strerror})") from None
    recorded = written.get(path)
    if recorded is not None and hashlib.sha256(data).hexdigest() != recorded:
        raise BisectError(
            f"{path} is not the file perfbot wrote (its SHA-256 differs); no artifact is written"
        )
    return data


def _named(report: dict[str, Any], renamed: Mapping[str, str]) -> dict[str, Any]:
    """The report with each run's results file named as in the artifact folder."""

    def name(path: str) -> str:
        return renamed.get(path, Path(path).name)

    measurements = [{**m, "results": name(m["results"])} for m in report["measurements"]]
    reference = report["reference"]
    if reference is not None:
        reference = {**reference, "results": name(reference["results"])}
    return {**report, "reference": reference, "measurements": measurements}


def _write(path: Path, content: bytes) -> str:
    handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".part", dir=path.parent)
    with os.fdopen(handle, "wb") as stream:
        stream.write(content)
    os.replace(temporary, path)
    return hashlib.sha256(content).hexdigest()


def is_bisect_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a bisection's artifact (its report) rather than benchmark results."""
    return (folder / REPORT).is_file()


def read_folder(
    folder: Path, *, good: str | None = None, bad: str | None = None, suite: str | None = None
) -> tuple[str, str]:
    """The status and Markdown of the bisection artifact in ``folder``, read as the App reads it
    (`bot.core.bench.bisect_artifact.read`): about ``good``, ``bad`` and ``suite`` when given, else
    those its report names. A report that cannot be read is an ``error``, with the problems."""
    files = {
        path.name: path.read_bytes()[: MAX_FILE_BYTES + 1]
        for path in sorted(folder.iterdir())
        if path.name in FILES and path.is_file()
    }
    files = {name: data for name, data in files.items() if len(data) <= MAX_FILE_BYTES}
    named = _named_in_report(files.get(REPORT, b""))
    outcome, problems = reader.read(
        files,
        good=good or named.get("good", ""),
        bad=bad or named.get("bad", ""),
        suite=suite or named.get("suite", ""),
    )
    notes = "".join(f"- {escape_md(problem)}\n" for problem in problems)
    if outcome is None:
        return "error", "### perfbot bisect: the artifact cannot be read\n\n" + notes
    return outcome.status, outcome.markdown + (f"\n{notes}" if notes else "")


def _named_in_report(data: bytes) -> dict[str, str]:
    """GOOD, BAD and the suite as the report names them, for a folder read without them given."""
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {key: parsed[key] for key in ("good", "bad", "suite") if isinstance(parsed.get(key), str)}
