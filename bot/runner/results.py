"""Writing the results file of a run: the `Results` model of `bot.core.judge.results`, built round
by round and rewritten atomically after every one, so that an interrupted run still leaves what it
measured.

Beyond what `perfbot compare` needs, the file says how the run went: ``status`` (``running`` while
rounds go on, then ``complete``, ``stopped`` when the run ended early, or ``failed`` when no round
could be measured), ``error`` (why it stopped), ``warmups`` (the uncounted warm-up rounds) and
``options`` (how the run was asked for) and ``timeline`` (where its seconds went, `timeline`);
docs/runner.md describes the format. A round is ``ok`` only
when it was measured and its metrics fit the model.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bot.core.config.schema import MetricDeclaration
from bot.core.formats.units import factor
from bot.core.judge.profile import Profile
from bot.core.judge.results import (
    MAX_METRICS,
    SCHEMA,
    MetricSpec,
    Results,
    Revision,
    Round,
    Side,
    Warmup,
    problem,
)
from bot.core.stepmap import StepMap

from .fingerprint import now
from .timeline import Timeline


@dataclass
class ResultsFile:
    """The results file of one suite's run, written again after every change."""

    path: Path
    suite: str
    repo: str
    base: Revision
    head: Revision
    declared: dict[str, MetricDeclaration]
    options: dict[str, Any]
    started_at: str = field(default_factory=now)
    rounds: list[Round] = field(default_factory=list)
    warmups: list[Warmup] = field(default_factory=list)
    learned: dict[str, MetricDeclaration] = field(default_factory=dict)
    status: str = "running"
    error: str | None = None
    finished_at: str | None = None
    profile_errors: dict[Side, str] = field(default_factory=dict)
    step_map: StepMap | None = None
    # path -> SHA-256 of the bytes last written there, shared by a run's files: what the action
    # checks the uploaded files against (a benchmark's process may have rewritten the file since).
    ledger: dict[Path, str] | None = None
    timeline: Timeline | None = None  # the run's phases so far, written with every rewrite

    def add_round(
        self,
        side: Side,
        index: int,
        ok: bool,
        error: str | None,
        metrics: dict[str, float],
        declarations: dict[str, MetricDeclaration],
        spread: dict[str, dict[str, float]] | None = None,
        seconds: float | None = None,
        process: str | None = None,
    ) -> Round:
        """Record a round (with the standard errors of its values, where the suite timed many
        calls, and how long it took); one whose metrics the model refuses is recorded as failed,
        saying why."""
        why = None
        if ok:
            metrics, spread, why = self._in_known_units(metrics, declarations, spread)
        if why is None and ok:
            undeclared = sorted(set(metrics) - set(self.declared) - set(self.learned))
            if undeclared:
                why = f"metric {undeclared[0]} has no unit and direction declared"
        if why is None and ok:
            why = self._too_many(metrics)
        if why is not None:
            measured = _refused(side, index, why, seconds)
        else:
            try:
                measured = Round.model_validate(
                    {
                        "side": side,
                        "index": index,
                        "ok": ok,
                        "error": error,
                        "metrics": metrics if ok else {},
                        "spread": (spread or None) if ok else None,
                        "seconds": _seconds(seconds),
                        "process": process,
                    }
                )
            except ValidationError as refused:
                measured = _refused(side, index, problem(refused), seconds)
        self.rounds.append(measured)
        self.write()
        return measured

    def _in_known_units(
        self,
        metrics: dict[str, float],
        declarations: dict[str, MetricDeclaration],
        spread: dict[str, dict[str, float]] | None,
    ) -> tuple[dict[str, float], dict[str, dict[str, float]] | None, str | None]:
        """The round's values in each metric's unit in this file: the one declared, or the one it
        was first measured in; a time in another time unit is converted (value and standard
        error), a unit that cannot be converted refuses the round, saying which. What the round
        declares of each metric is learned, in the metric's unit."""
        known = {**self.declared, **self.learned}
        metrics, spread = dict(metrics), {name: dict(s) for name, s in (spread or {}).items()}
        for name, declaration in declarations.items():
            if name not in known:
                self.learned[name] = declaration
                continue
            unit = known[name].unit
            scale = factor(declaration.unit, unit)
            if scale is None:
                return metrics, spread, f"metric {name} is in {declaration.unit} here, in {unit} before"
            # What else the round says of the metric (its role, the mode it ran in) is kept.
            self.learned[name] = declaration.model_copy(update={"unit": unit})
            if scale != 1.0 and name in metrics:
                metrics[name] = metrics[name] * scale
                if name in spread:
                    spread[name]["se"] = spread[name]["se"] * scale
        return metrics, spread or None, None

    def _too_many(self, metrics: dict[str, float]) -> str | None:
        """Why the round's metrics do not fit the file: more of them, with those earlier rounds
        reported, than a results file holds (`MAX_METRICS`)."""
        names = {name for r in self.rounds if r.ok for name in r.metrics} | set(metrics)
        if len(names) <= MAX_METRICS:
            return None
        return (
            f"{len(names)} metrics, more than the {MAX_METRICS} a suite may report: have it run fewer "
            f"benchmarks (a filter such as pytest's -k or --benchmark_filter) or split it into suites"
        )

    def add_warmup(self, side: Side, ok: bool, error: str | None, seconds: float | None = None) -> None:
        self.warmups.append(Warmup(side=side, ok=ok, error=error, seconds=_seconds(seconds)))
        self.write()

    def set_profile(self, side: Side, profile: Profile) -> None:
        """Add one side's kernel profile, from the profiled pass after the rounds."""
        revision = self.base if side == "base" else self.head
        profiled = Revision(sha=revision.sha, fingerprint=revision.fingerprint, profile=profile)
        self.base, self.head = (profiled, self.head) if side == "base" else (self.base, profiled)
        self.profile_errors.pop(side, None)
        self.write()

    def set_step_map(self, step_map: StepMap) -> None:
        """Add the per-step map of the base side's profiled pass (`bot.core.stepmap`)."""
        self.step_map = step_map
        self.write()

    def profile_failed(self, side: Side, error: str) -> None:
        self.profile_errors[side] = error
        self.write()

    def discard(self, why: str) -> None:
        """Take back every round measured: something the run cannot trust (a side's code changed
        by the other side) may have made any of them; each keeps its place, failed, saying why."""
        self.rounds = [
            Round(
                side=r.side,
                index=r.index,
                ok=False,
                error=f"discarded: {why}",
                seconds=r.seconds,
                process=r.process,
            )
            for r in self.rounds
        ]
        self.write()

    def finish(self, status: str, error: str | None = None, after: dict[str, Any] | None = None) -> None:
        """End the run; ``after``: the machine's readings at the end, added to both fingerprints."""
        if after is not None:
            self.base, self.head = (
                Revision(
                    sha=revision.sha,
                    fingerprint={**revision.fingerprint, "after": after},
                    profile=revision.profile,
                )
                for revision in (self.base, self.head)
            )
        self.status, self.error, self.finished_at = status, error, now()
        self.write()

    def metrics(self) -> dict[str, MetricSpec]:
        """Declarations of every metric some measured round reported, in a stable order."""
        seen = {name for r in self.rounds if r.ok for name in r.metrics}
        known = {**self.declared, **self.learned}
        return {
            name: MetricSpec(
                unit=known[name].unit, better=known[name].better, role=known[name].role, mode=known[name].mode
            )
            for name in sorted(seen)
        }

    def snapshot(self) -> Results:
        """The file as it stands."""
        return Results.model_validate(
            {
                "schema": SCHEMA,
                "suite": self.suite,
                "repo": self.repo,
                "base": self.base,
                "head": self.head,
                "metrics": self.metrics(),
                "rounds": self.rounds,
                "started_at": self.started_at,
                "finished_at": self.finished_at,
                "status": self.status,
                "error": self.error,
                "warmups": self.warmups,
                "options": self.options,
                "profile_errors": self.profile_errors or None,
                "step_map": self.step_map.to_dict() if self.step_map is not None else None,
            }
        )

    def write(self) -> None:
        data = self.snapshot().model_dump(mode="json", by_alias=True)
        if self.timeline is not None:
            data["timeline"] = self.timeline.to_json()
        digest = write_json(self.path, data)
        if self.ledger is not None:
            self.ledger[self.path] = digest


def _refused(side: Side, index: int, why: str, seconds: float | None = None) -> Round:
    return Round(
        side=side,
        index=index,
        ok=False,
        error=f"measured, but not a valid result: {why}",
        seconds=_seconds(seconds),
    )


def _seconds(seconds: float | None) -> float | None:
    """A round's duration as the file keeps it: milliseconds are enough."""
    return None if seconds is None else round(max(seconds, 0.0), 3)


def write_json(path: Path, data: dict[str, Any]) -> str:
    """Replace ``path`` in one step, so a reader never sees half a file; the SHA-256 of what was
    written, from the bytes themselves (not read back)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (json.dumps(data, indent=2) + "\n").encode()
    handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".part", dir=path.parent)
    with os.fdopen(handle, "wb") as stream:
        stream.write(text)
    os.replace(temporary, path)
    return hashlib.sha256(text).hexdigest()


def out_path(out: Path, suite: str, several: bool) -> Path:
    """``out`` itself for one suite; ``results.<suite>.json`` beside it for each of several."""
    return out.with_name(f"{out.stem}.{suite}{out.suffix or '.json'}") if several else out
