"""The results file (schema ``perfbot.results/1``), rewritten atomically after every round.

Keys beyond the contract in ARCHITECTURE.md, for readers that want them: ``status`` (``running`` while
rounds go on, then ``complete``, ``stopped`` when the run ended early, or ``failed`` when no round could
be measured), ``error`` (why it stopped), ``warmups`` (outcome of each uncounted warm-up round) and
``options`` (how the run was asked for). A round is ``ok`` only when it was measured.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bot.core.config.schema import MetricDeclaration

from .fingerprint import now

SCHEMA = "perfbot.results/1"


@dataclass
class ResultsFile:
    path: Path
    suite: str
    repo: str
    base: dict
    head: dict
    declared: dict[str, MetricDeclaration]
    options: dict
    started_at: str = field(default_factory=now)
    rounds: list[dict] = field(default_factory=list)
    warmups: list[dict] = field(default_factory=list)
    learned: dict[str, MetricDeclaration] = field(default_factory=dict)
    status: str = "running"
    error: str | None = None
    finished_at: str | None = None

    def add_round(self, side: str, index: int, ok: bool, error: str | None, metrics: dict[str, float],
                  declarations: dict[str, MetricDeclaration]) -> None:
        self.learned.update(declarations)
        self.rounds.append({"side": side, "index": index, "ok": ok, "error": error,
                            "metrics": dict(metrics) if ok else {}})
        self.write()

    def add_warmup(self, side: str, ok: bool, error: str | None) -> None:
        self.warmups.append({"side": side, "ok": ok, "error": error})
        self.write()

    def finish(self, status: str, error: str | None = None) -> None:
        self.status, self.error, self.finished_at = status, error, now()
        self.write()

    def metrics(self) -> dict[str, dict]:
        """Declarations of every metric some measured round reported, in a stable order."""
        seen = {name for r in self.rounds if r["ok"] for name in r["metrics"]}
        known = {**self.declared, **self.learned}
        return {name: {"unit": known[name].unit, "better": known[name].better}
                for name in sorted(seen) if name in known}

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA, "suite": self.suite, "repo": self.repo, "base": self.base, "head": self.head,
            "metrics": self.metrics(), "rounds": self.rounds, "started_at": self.started_at,
            "finished_at": self.finished_at, "status": self.status, "error": self.error,
            "warmups": self.warmups, "options": self.options,
        }

    def write(self) -> None:
        write_json(self.path, self.to_dict())


def write_json(path: Path, data: dict) -> None:
    """Replace ``path`` in one step, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".part", dir=path.parent)
    with os.fdopen(handle, "w") as stream:
        json.dump(data, stream, indent=2)
        stream.write("\n")
    os.replace(temporary, path)


def out_path(out: Path, suite: str, several: bool) -> Path:
    """``out`` itself for one suite; ``results.<suite>.json`` beside it for each of several."""
    return out.with_name(f"{out.stem}.{suite}{out.suffix or '.json'}") if several else out
