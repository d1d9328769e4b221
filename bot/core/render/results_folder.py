"""What the action reports of a finished benchmark's results folder: the worst verdict of its suites
and each suite's Markdown, or why a results file has no verdict. `bot.runner.report` reads the folder
and judges its files; this renders what came of them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.render.markdown import escape_md
from bot.core.vocabulary import VERDICTS_WORST_FIRST

MAX_TEXT = 300  # characters of a reason taken from a file, which a benchmark's output may have filled
NO_RESULTS = "### ❌ perfbot bench: no results file was written"


@dataclass(frozen=True)
class Report:
    """The folder's verdict, and the Markdown of each results file in name order."""

    verdict: str
    sections: tuple[str, ...]

    @property
    def markdown(self) -> str:
        return "\n\n".join(self.sections) + "\n"


def folder_report(judged: Sequence[tuple[str, str]]) -> Report:
    """The report of the folder's files, each judged as (verdict, Markdown); none is an ``error``."""
    if not judged:
        return Report("error", (NO_RESULTS,))
    verdicts = {verdict for verdict, _ in judged}
    return Report(next(v for v in VERDICTS_WORST_FIRST if v in verdicts), tuple(text for _, text in judged))


def unusable(name: str, data: bytes, problem: str) -> str:
    """Why the results file ``name`` has no verdict, with how its run ended when the file says so."""
    lines = [f"### ❌ perfbot bench: no verdict from `{escape_md(name)}`", "", escape_md(problem[:MAX_TEXT])]
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
