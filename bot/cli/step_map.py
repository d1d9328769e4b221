"""The ``--map FILE`` option of `perfbot score` and `perfbot triage`: read a per-step map (a map
file, or a results file holding one) and, where a repository has the map's commit, the source the
call graph is built from."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .parsing import UsageError

# The map's model and machinery load only when --map is given: most scores have no map.
if TYPE_CHECKING:
    from bot.adapters.git_repo import GitRepo
    from bot.core import stepmap
    from bot.core.risk.diff import ParsedDiff
    from bot.core.risk.stepmap_scoring import MapEvidence

MAX_BYTES = 64 * 2**20
# Files the call graph reads from the repository (`stepmap_scoring.sources_wanted`).
MAX_SOURCES = 500


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--map",
        metavar="FILE",
        help="a per-step map (JSON: a map file, or a results file holding one), or a "
        "torch-profiler trace with Python stacks (with --repo checked out at the traced "
        "commit): changed functions a step runs score as hot, those it never runs in hot "
        "files as set-up code; with a repository that has the map's commit, "
        "functions they call and constants they read count too",
    )


def read(name: str, repo: GitRepo | None = None) -> stepmap.StepMap:
    """The map in file ``name``, or made from the torch-profiler trace in it with ``repo`` (its
    checked-out commit: the traced one); a file that is neither is a `UsageError` naming it."""
    from bot.core import stepmap

    try:
        with Path(name).open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except IsADirectoryError:
        raise UsageError(f"{name}: is a directory, not a map file") from None
    except OSError as error:
        raise UsageError(f"{name}: cannot read ({error.strerror})") from None
    if len(data) > MAX_BYTES:
        raise UsageError(f"{name}: larger than the {MAX_BYTES // 2**20} MiB a map file may be")
    if data[:2] == b"\x1f\x8b":  # what the engines' profilers write (.json.gz)
        raise UsageError(
            f"{name}: gzipped; make a map of a gzipped trace with `perfbot map`, then use the map"
        )
    try:
        parsed = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"{name}: not a JSON map file ({_first_line(error)})") from None
    except RecursionError:
        raise UsageError(f"{name}: not a JSON map file (nested too deeply)") from None
    from bot.runner import trace_map

    try:
        if trace_map.is_trace(parsed):
            return _from_trace(name, parsed, repo)
        return stepmap.parse(parsed)
    except stepmap.StepMapError as error:
        raise UsageError(f"{name}: {error}") from None


def _from_trace(name: str, trace: dict, repo: GitRepo | None) -> stepmap.StepMap:
    """The map of a torch-profiler trace at ``repo``'s checked-out commit."""
    from bot.runner import trace_map

    commit = repo.head_sha() if repo is not None else None
    if repo is None or commit is None:
        raise UsageError(
            f"{name}: a profiler trace; --repo must name the repository checked out at the traced commit"
        )
    resolve = trace_map.resolved(
        trace_map.file_names(trace), lambda paths: repo.existing_paths(commit, paths)
    )
    return trace_map.build(trace, resolve, lambda path: repo.show(commit, path), commit, "profiled step")


def evidence(
    step_map: stepmap.StepMap,
    repo: GitRepo | None,
    changed: Iterable[str] = (),
    fallback: str | None = None,
    diff: ParsedDiff | None = None,
) -> MapEvidence:
    """The map with the call graph of its commit's source when ``repo`` has that commit (else of
    ``fallback``'s, when given; else no graph); ``diff``, the change scored, lets the map's recorded
    lines judge which of its lines ran."""
    from bot.core.risk import stepmap_scoring

    return stepmap_scoring.evidence(
        step_map, _reader(repo, step_map.commit, fallback), changed, None, MAX_SOURCES, diff
    )


def _reader(repo: GitRepo | None, commit: str, fallback: str | None) -> Callable[[str], str | None] | None:
    if repo is None:
        return None
    from bot.adapters.git_repo import RepoError

    for revision in (commit, fallback):
        if revision is None:
            continue
        try:
            sha = repo.resolve(revision)
        except RepoError:
            continue
        return lambda path: repo.show(sha, path)
    return None


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__
