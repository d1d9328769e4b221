"""The verdict and Markdown of a finished benchmark's results folder: what the action reports.

Each results file of the folder (``results.json``, or ``results.<suite>.json`` for several suites,
as `perfbot bench run --out` names them) is judged as the bot judges a run's artifact
(`bot.core.bench.judging.judge_suite`: as `perfbot compare` does, with its defaults). A file that
cannot be judged (a run that failed before any round, a file cut short) is an ``error`` for its
suite, with the reason; the folder's verdict is the worst of its suites'
(`bot.core.render.results_folder`). Each suite's Markdown ends with where its run's seconds went,
where the file records it (`timeline`).
"""

from __future__ import annotations

import json
from pathlib import Path

from bot.core.bench import judging
from bot.core.judge import results
from bot.core.render.results_folder import Report, folder_report, unusable

from . import timeline

MAX_FILE_BYTES = 64 * 2**20


def results_files(folder: Path) -> list[Path]:
    """The results files `perfbot bench run` wrote into ``folder``, by name."""
    return sorted(p for p in folder.iterdir() if judging.is_results_file(p.name) and p.is_file())


def report(folder: Path) -> Report:
    """Judge every results file in ``folder``; a folder without any is an ``error``."""
    return folder_report([judge(path) for path in results_files(folder)])


def judge(path: Path) -> tuple[str, str]:
    """The verdict of one results file, and its Markdown."""
    data = path.read_bytes()[: MAX_FILE_BYTES + 1]
    try:
        if len(data) > MAX_FILE_BYTES:
            raise results.ResultsError(f"{path.name}: larger than {MAX_FILE_BYTES // 2**20} MiB")
        loaded = results.load(data, path.name)
    except results.ResultsError as error:
        return "error", unusable(path.name, data, str(error))
    suite = judging.judge_suite(loaded)
    spent = spent_markdown(data)
    return suite.verdict, suite.markdown + (f"\n\n{spent}" if spent else "")


def spent_markdown(data: bytes) -> str:
    """Where the run's seconds went, from the file's ``timeline`` (empty where it has none that
    reads: the results model leaves the field to this reader)."""
    try:
        recorded = json.loads(data).get("timeline")
    except (ValueError, AttributeError):
        return ""
    read = timeline.read(recorded)
    return timeline.markdown(read) if read is not None else ""
