"""What code a benchmark run measured: the checks that a worktree holds the commit it names.

A bisection compares commits by benchmarking each in a worktree of its own. Its answer is only as
good as the assumption that the code each run imported is the commit the run is named after; a
checkout that moved (a set-up step that pulls), files the set-up or the benchmark edited, or a
package that resolves to another copy (an editable install of the main checkout, say) would make
every probe measure the same code and the bisection blame an innocent commit. `verify` checks,
for one worktree:

1. its HEAD is the named commit and no tracked file differs from it;
2. each top-level Python package of the checkout (at its root, or under ``python/`` or ``src/``)
   resolves, for the suite's interpreter in the round's environment started at the worktree's
   root, to the copy inside that worktree. A package the interpreter does not find there at all is
   not an error (a suite can put it on its path itself), and is reported as unverified.

It runs before a run's rounds (nothing is measured on the wrong code) and after them (nothing
moved while they ran).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bot.adapters.git_repo import GitRepo

from .rounds import child_env
from .suites import Suite
from .suites.base import RoundContext, RoundId

# Where a checkout keeps its importable packages; the first that holds any wins.
PACKAGE_ROOTS = (".", "python", "src")
# Folders with an __init__.py that are no part of what an engine imports when it serves.
NOT_SERVED = frozenset(
    {
        "tests",
        "test",
        "benchmarks",
        "benchmark",
        "examples",
        "example",
        "docs",
        "doc",
        "scripts",
        "tools",
        "build",
        "dist",
    }
)
_TIMEOUT = 60
_FIND = (
    "import importlib.util, json, sys\n"
    "found = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        spec = importlib.util.find_spec(name)\n"
    "    except Exception:\n"
    "        spec = None\n"
    "    where = None if spec is None else spec.origin\n"
    "    if spec is not None and where in (None, 'namespace'):\n"
    "        where = next(iter(spec.submodule_search_locations or []), None)\n"
    "    found[name] = where\n"
    "print(json.dumps(found))\n"
)


class ProvenanceError(ValueError):
    """A worktree that does not hold the code of the commit it names: what a run there measures
    is not that commit."""


@dataclass(frozen=True, slots=True)
class Checked:
    """What `verify` established about one worktree."""

    sha: str
    imported: tuple[str, ...]  # packages that resolve inside the worktree
    unverified: tuple[str, ...]  # packages the interpreter does not find from its root

    def describe(self) -> str:
        text = f"{self.sha[:10]} checked out unmodified"
        if self.imported:
            text += f", {', '.join(self.imported)} imported from it"
        if self.unverified:
            text += f" ({', '.join(self.unverified)} not importable from its root: unverified)"
        return text


def verify(tree: Path, sha: str, suite: Suite, when: str) -> Checked:
    """Check that ``tree`` holds exactly commit ``sha`` and that the suite's interpreter imports the
    checkout's packages from it; `ProvenanceError` saying what differs (``when``: "before the
    rounds" or "after the rounds", for the message)."""
    checkout = GitRepo.open(tree)
    head = checkout.head_sha()
    if head != sha:
        raise ProvenanceError(
            f"the worktree {tree} of {sha[:10]} is at {str(head)[:10]} {when}: something moved its checkout"
        )
    if checkout.is_dirty(untracked_files=False):
        raise ProvenanceError(
            f"tracked files of the worktree {tree} ({sha[:10]}) differ from the "
            f"commit {when}: the set-up or the benchmark edited them"
        )
    packages = top_level_packages(tree)
    if not packages:
        return Checked(sha, (), ())
    found = _resolve(tree, packages, suite)
    imported, unverified = [], []
    root = tree.resolve()
    for name in packages:
        where = found.get(name)
        if where is None:
            unverified.append(name)
        elif Path(where).resolve().is_relative_to(root):
            imported.append(name)
        else:
            raise ProvenanceError(
                f"{_python(suite)} imports {name} from {where}, not from the worktree of "
                f"{sha[:10]} ({tree}) {when}: every run would measure that copy (an installed or "
                f"editable package shadows the checkout); uninstall it, or put the checkout's own "
                f"folder first on the path in the suite's env (PYTHONPATH)"
            )
    return Checked(sha, tuple(imported), tuple(unverified))


def top_level_packages(tree: Path) -> list[str]:
    """The importable top-level packages of the checkout at ``tree``: folders with an
    ``__init__.py`` in the first of `PACKAGE_ROOTS` that has any, tests and tooling left out."""
    for folder in PACKAGE_ROOTS:
        base = tree / folder
        if not base.is_dir():
            continue
        names = sorted(
            entry.name
            for entry in base.iterdir()
            if entry.is_dir()
            and entry.name.isidentifier()
            and entry.name not in NOT_SERVED
            and (entry / "__init__.py").is_file()
        )
        if names:
            return names
    return []


def _resolve(tree: Path, packages: list[str], suite: Suite) -> dict[str, str | None]:
    """Where the suite's interpreter finds each package when started at ``tree`` with the
    environment the suite's rounds get."""
    with tempfile.TemporaryDirectory(prefix="perfbot-provenance-") as scratch:
        context = RoundContext(tree, Path(scratch), "base", RoundId("counted", 0))
        extra = next(iter(suite.round_commands(context)), None)
        env = child_env(extra.env if extra else {}, context, suite.python, suite.pass_env)
        try:
            done = subprocess.run(
                [_python(suite), "-c", _FIND, *packages],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                timeout=_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ProvenanceError(
                f"cannot ask {_python(suite)} where it imports {', '.join(packages)} from: {error}"
            ) from None
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None
    except json.JSONDecodeError:
        found = None
    if done.returncode != 0 or not isinstance(found, dict):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise ProvenanceError(
            f"cannot ask {_python(suite)} where it imports {', '.join(packages)} from: {last}"
        )
    return {name: value if isinstance(value, str) else None for name, value in found.items()}


def _python(suite: Suite) -> str:
    """The interpreter that answers for the suite: its own, or python3 on PATH."""
    return suite.python or "python3"
