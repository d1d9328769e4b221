"""The output folder of `perfbot bisect`: the record of its settings, and the runs already measured
there, which a re-run with the same settings reuses instead of measuring again.

``bisect-settings.yml`` names GOOD, BAD, the suite (with its config), the metric and the measuring
options. A run into a folder whose record differs stops with an error naming what differs, so that
the runs of two bisections never mix. A results file there is reused when it measured the same base
and head with the same suite and ended ``complete`` or ``failed`` (a commit that does not build or
run is an outcome too); an interrupted one is measured again. A pair measured a second time (a
recheck, its file named ``recheck-...``) is reused as such, never in place of the first.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bot.core.bisect.report import BisectError
from bot.core.judge import results

SETTINGS_FILE = "bisect-settings.yml"
REUSABLE = ("complete", "failed")
RECHECK = "recheck"  # the purpose, and the file name's prefix, of a pair measured again
_HEADER = (
    "# perfbot bisect: the settings of the runs in this folder;\n"
    "# a re-run with the same settings reuses them.\n"
)


class BisectFolder:
    """The ``--out`` folder of one bisection, checked against its settings."""

    def __init__(self, path: Path, reusable: dict[tuple[str, str, str | None], Path]):
        self.path = path
        self._reusable = reusable

    @classmethod
    def open(cls, path: Path, settings: dict[str, Any]) -> BisectFolder:
        """Create the folder and its record, or check the record already there against ``settings``
        and index the runs it holds; `BisectError` when it belongs to another bisection."""
        record = path / SETTINGS_FILE
        try:
            path.mkdir(parents=True, exist_ok=True)
            text = record.read_text() if record.is_file() else None
        except OSError as error:
            raise BisectError(f"{path}: cannot use it as the output folder ({error.strerror})") from None
        if text is None:
            _write(record, settings)
            return cls(path, {})
        differences = _differences(_parse(text, record), settings)
        if differences:
            raise BisectError(
                f"{path} holds the runs of another bisection ({'; '.join(differences)}): "
                f"name another --out, or empty that folder"
            )
        return cls(path, _index(path, settings["suite"]))

    def reusable(self, base: str, head: str, kind: str | None = None) -> Path | None:
        """The results file of an earlier run of ``head`` against ``base``, if it can be reused;
        ``kind`` `RECHECK` for the pair's second measurement."""
        return self._reusable.get((base, head, kind))

    def __len__(self) -> int:
        return len(self._reusable)


def _parse(text: str, record: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        raise BisectError(
            f"{record}: not the settings of a bisection; name another --out, or empty that folder"
        )
    return data


def _differences(recorded: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    found = []
    for key in wanted.keys() | recorded.keys():
        there, here = recorded.get(key), wanted.get(key)
        if there == here:
            continue
        if isinstance(there, dict | list) or isinstance(here, dict | list):
            found.append(f"{key} differs")
        else:
            found.append(f"{key} {_show(there)} there, {_show(here)} here")
    return sorted(found)


def _show(value: Any) -> str:
    if isinstance(value, str) and len(value) == 40:  # a sha
        return value[:10]
    return "(default)" if value is None else str(value)


def _index(path: Path, suite: str) -> dict[tuple[str, str, str | None], Path]:
    """The reusable results files of ``path`` by (base sha, head sha, `RECHECK` or None); other
    files are left alone."""
    found: dict[tuple[str, str, str | None], Path] = {}
    for candidate in sorted(path.glob("*.json")):
        try:
            loaded = results.load(candidate.read_bytes(), str(candidate))
        except (OSError, results.ResultsError):
            continue  # not a results file (the report, a manifest), or one cut short
        if loaded.suite == suite and loaded.status in REUSABLE:
            kind = RECHECK if candidate.name.startswith(RECHECK) else None
            found.setdefault((loaded.base.sha, loaded.head.sha, kind), candidate)
    return found


def _write(record: Path, settings: dict[str, Any]) -> None:
    handle, temporary = tempfile.mkstemp(prefix=record.name, suffix=".part", dir=record.parent)
    with os.fdopen(handle, "w") as stream:
        stream.write(_HEADER)
        yaml.safe_dump(settings, stream, sort_keys=False)
    os.replace(temporary, record)
