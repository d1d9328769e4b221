"""The stored per-step map of a repository, made ready to score a pull request with: the map a
completed default-branch run left (`Benchmarks.step_map`), and the call graph of the files it needs
read from GitHub at the map's commit."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from bot.core.risk import diff as diffs
from bot.core.risk import stepmap_scoring
from bot.core.risk.stepmap_scoring import MapEvidence

from .ports.github import GitHub
from .services import Services

log = logging.getLogger("perfbot.step_maps")

# Files read from GitHub (one request each) per review for the call graph: the changed Python files
# first, then the map's by share; a function in a file left out gets no verdict from the graph.
MAX_SOURCES = 40
_NEW_PATH = re.compile(r"^\+\+\+ b/(.+?)[ \t]*$", re.MULTILINE)


def changed_paths(diff: str) -> list[str]:
    """The new paths of a unified diff's files (``+++ b/PATH``), in order; the call graph reads
    the Python ones among them first."""
    return list(dict.fromkeys(match[1] for match in _NEW_PATH.finditer(diff)))


def evidence(
    services: Services, github: GitHub, repo: str, changed: Iterable[str], diff: str | None = None
) -> MapEvidence | None:
    """What the stored map says of a pull request's changes to ``changed``; None when the
    repository has no map. ``diff``: the pull request's unified diff, which lets the map's recorded
    lines judge whether the changed lines ran in its steps (None: by function only)."""
    stored = services.store.benchmarks.step_map(repo)
    if stored is None:
        return None
    commit = stored.step_map.commit

    def read(path: str) -> str | None:
        return github.read_file(repo, path, commit)

    parsed = diffs.parse(diff) if diff is not None and stored.step_map.lines is not None else None
    found = stepmap_scoring.evidence(stored.step_map, read, changed, stored.branch, MAX_SOURCES, parsed)
    if found.graph is not None and found.graph.skipped:
        log.info(
            "files of the map's commit that do not parse; left out of the call graph",
            extra={"repo": repo, "count": len(found.graph.skipped)},
        )
    return found
