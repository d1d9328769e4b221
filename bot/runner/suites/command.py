"""The `command` suite: any user command; metrics from ``$PERFBOT_METRICS_FILE`` or ``PERFBOT_METRIC`` lines.

A line ``PERFBOT_METRIC name=value unit=ms better=lower`` on standard output reports one metric
(``unit`` and ``better`` may be left out when the suite's config declares the metric). The JSON file,
if the command writes one, maps names to numbers or to ``{"value", "unit", "better"}`` objects,
optionally under a top-level ``"metrics"`` key. A malformed line or file fails the round.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import ValidationError

from bot.core.config.suite_kinds.base import MetricDeclaration
from bot.core.config.suite_kinds.command import CommandSuite
from bot.core.judge.kineto import Traced
from bot.core.judge.profile import Profile

from .base import (
    PROFILE_DIR,
    Command,
    Measurement,
    Output,
    RoundContext,
    RoundFailed,
    Suite,
    finite,
    read_result,
    trace_traced,
)

MARKER = "PERFBOT_METRIC"
METRICS_FILE = "metrics.json"
_NAME = re.compile(r"^[A-Za-z0-9_.:/-]{1,80}$")


class CommandBench(Suite, kind="command"):
    config: CommandSuite

    @property
    def metrics(self) -> dict[str, MetricDeclaration]:
        return dict(self.config.metrics)

    def setup_commands(self, worktree: Path) -> list[Command]:
        if not self.config.setup:
            return []
        return [Command("setup", ("bash", "-c", self.config.setup), dict(self.config.env))]

    def round_commands(self, context: RoundContext) -> list[Command]:
        env = {**self.config.env, "PERFBOT_METRICS_FILE": str(context.out_dir / METRICS_FILE)}
        return [Command(self.name, ("bash", "-c", self.config.command), env)]

    def profile_commands(self, context: RoundContext) -> list[Command]:
        """The profiled pass: ``profile_command`` (default: the command itself) with
        ``$PERFBOT_PROFILE_DIR`` naming the folder where it writes its Kineto trace."""
        folder = context.out_dir / PROFILE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        env = {
            **self.config.env,
            "PERFBOT_PROFILE_DIR": str(folder),
            "PERFBOT_METRICS_FILE": str(context.out_dir / METRICS_FILE),
        }
        command = self.config.profile_command or self.config.command
        return [Command(f"{self.name}-profile", ("bash", "-c", command), env)]

    def parse_profile(self, context: RoundContext, outputs: list[Output]) -> Profile:
        return self.parse_traced(context, outputs).profile

    def parse_traced(self, context: RoundContext, outputs: list[Output]) -> Traced:
        return trace_traced(context, f"the {self.name} command's trace")

    def parse(self, context: RoundContext, outputs: list[Output]) -> Measurement:
        reported = parse_lines(outputs[-1].stdout)
        metrics_file = context.out_dir / METRICS_FILE
        if metrics_file.exists():
            reported.update(parse_json(read_result(metrics_file, METRICS_FILE)))
        if not reported:
            raise RoundFailed(
                f"no metrics: print '{MARKER} name=value unit=... better=lower|higher' "
                f"lines or write JSON to $PERFBOT_METRICS_FILE"
            )
        return self.measurement(reported)

    def measurement(self, reported: dict[str, dict]) -> Measurement:
        values, declarations = {}, {}
        for name, fields in reported.items():
            values[name] = finite(name, fields.get("value"))
            declared = self.config.metrics.get(name)
            unit = fields.get("unit", declared.unit if declared else "")
            better = fields.get("better", declared.better if declared else None)
            if better is None:
                raise RoundFailed(
                    f"metric {name!r}: say better=lower or better=higher (or declare it "
                    f"in the suite's metrics)"
                )
            try:
                declarations[name] = MetricDeclaration(unit=unit, better=better)
            except ValidationError:
                raise RoundFailed(
                    f"metric {name!r}: unit {unit!r} / better {better!r} not understood"
                ) from None
        return Measurement(values, declarations)


def parse_lines(stdout: str) -> dict[str, dict]:
    """Every ``PERFBOT_METRIC`` line of ``stdout``, by metric name; a malformed one fails the round."""
    reported: dict[str, dict] = {}
    for line in stdout.splitlines():
        words = line.split()
        if not words or words[0] != MARKER:
            continue
        fields = dict(_pair(word, line) for word in words[1:])
        names = [key for key in fields if key not in ("unit", "better")]
        if len(names) != 1:
            raise RoundFailed(f"malformed metric line {line.strip()[:100]!r}: expected one name=value")
        reported[names[0]] = {"value": fields.pop(names[0]), **fields}
    return reported


def _pair(word: str, line: str) -> tuple[str, str]:
    key, sep, value = word.partition("=")
    if not sep or not value or not _NAME.match(key):
        raise RoundFailed(
            f"malformed metric line {line.strip()[:100]!r}: expected key=value, got {word[:40]!r}"
        )
    return key, value


def parse_json(text: str) -> dict[str, dict]:
    """The metrics of a JSON metrics file; anything but the documented shapes fails the round."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise RoundFailed(f"{METRICS_FILE}: not JSON ({error})") from None
    if isinstance(data, dict) and isinstance(data.get("metrics"), dict):
        data = data["metrics"]
    if not isinstance(data, dict):
        raise RoundFailed(f"{METRICS_FILE}: expected an object of metrics")
    reported = {}
    for name, entry in data.items():
        if not _NAME.match(str(name)):
            raise RoundFailed(f"{METRICS_FILE}: {str(name)[:40]!r} is not a metric name")
        if isinstance(entry, dict):
            unknown = set(entry) - {"value", "unit", "better"}
            if unknown or "value" not in entry:
                raise RoundFailed(
                    f"{METRICS_FILE}: metric {name!r} needs 'value' (and may have 'unit', 'better')"
                )
            reported[name] = dict(entry)
        else:
            reported[name] = {"value": entry}
    return reported
