"""The verdict and Markdown of a finished benchmark's results folder: what the action reports.

Each results file of the folder (``results.json``, or ``results.<suite>.json`` for several suites,
as `perfbot bench run --out` names them) is judged as the bot judges a run's artifact
(`bot.core.bench.judging.judge_suite`: as `perfbot compare` does, with its defaults). A file that
cannot be judged (a run that failed before any round, a file cut short) is an ``error`` for its
suite, with the reason; the folder's verdict is the worst of its suites'.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bot.core.bench import judging
from bot.core.judge import results
from bot.core.judge.stats import VERDICT_ORDER
from bot.core.render.markdown import escape_md

MAX_FILE_BYTES = 64 * 2**20
MAX_TEXT = 300  # characters of a reason taken from a file, which a benchmark's output may have filled


@dataclass(frozen=True)
class Report:
    """The folder's verdict, and the Markdown of each results file in name order."""

    verdict: str
    sections: tuple[str, ...]

    @property
    def markdown(self) -> str:
        return "\n\n".join(self.sections) + "\n"


def results_files(folder: Path) -> list[Path]:
    """The results files `perfbot bench run` wrote into ``folder``, by name."""
    return sorted(p for p in folder.iterdir() if judging.is_results_file(p.name) and p.is_file())


def report(folder: Path) -> Report:
    """Judge every results file in ``folder``; a folder without any is an ``error``."""
    files = results_files(folder)
    if not files:
        return Report("error", ("### ❌ perfbot bench: no results file was written",))
    judged = [judge(path) for path in files]
    verdicts = {verdict for verdict, _ in judged}
    return Report(next(v for v in VERDICT_ORDER if v in verdicts), tuple(text for _, text in judged))


def judge(path: Path) -> tuple[str, str]:
    """The verdict of one results file, and its Markdown."""
    data = path.read_bytes()[:MAX_FILE_BYTES + 1]
    try:
        if len(data) > MAX_FILE_BYTES:
            raise results.ResultsError(f"{path.name}: larger than {MAX_FILE_BYTES // 2**20} MiB")
        loaded = results.load(data, path.name)
    except results.ResultsError as error:
        return "error", unusable(path, data, str(error))
    suite = judging.judge_suite(loaded)
    return suite.verdict, suite.markdown


def unusable(path: Path, data: bytes, problem: str) -> str:
    """Why a results file has no verdict, with how its run ended when the file says so."""
    lines = [f"### ❌ perfbot bench: no verdict from `{escape_md(path.name)}`", "",
             escape_md(problem[:MAX_TEXT])]
    try:
        raw = json.loads(data)
    except ValueError:
        raw = None
    if isinstance(raw, dict) and isinstance(raw.get("status"), str):
        ended = f"The run ended **{escape_md(raw['status'][:32])}**"
        if isinstance(raw.get("error"), str):
            ended += f": {escape_md(raw['error'][:MAX_TEXT])}"
        lines += ["", ended]
    return "\n".join(lines)
