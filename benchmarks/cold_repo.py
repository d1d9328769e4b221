"""Build a repository whose regression hides in cold-looking code, for the GPU measurements of
docs/benchmarks.md: the sample repository (`examples/sample_repo.py`) with ten more commits on top.

    python benchmarks/cold_repo.py DEST     # prints a JSON manifest: good, bad, culprit, commits

GOOD is the sample's last commit (its slow commit included: the baseline is what main runs), BAD the
last of the ten. One of them, "utils: name the tensor in collective traces", slows every
allreduce down through a debug-tracing helper that looks off by default: it now summarises the
tensor (``abs().amax()``, a finiteness check) before it checks whether tracing is on, four kernels
launched per allreduce, 36 allreduces per EAGLE-3 cycle. It changes only
``mini_engine/utils/trace.py``, a file no step of the engine seems to need; the commit that put the
(then free) tracing call into the allreduce path comes three commits earlier and is harmless. The
other commits touch docs, tests, configuration and comments. The SHAs are the same on every
machine (the sample's fixed authors and dates).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.sandbox.sample import START, build, commit, git  # noqa: E402

CULPRIT = "utils: name the tensor in collective traces"

TRACE = '''\
"""Debug tracing of the engine's collectives; off unless MINI_ENGINE_TRACE is set."""

import os

_ENABLED = bool(os.environ.get("MINI_ENGINE_TRACE"))
_LOG: list = []


def record_collective(name, tensor):
    if _ENABLED:
        _LOG.append((name, tuple(tensor.shape)))
'''

TRACE_SLOW = '''\
"""Debug tracing of the engine's collectives; off unless MINI_ENGINE_TRACE is set."""

import os

_ENABLED = bool(os.environ.get("MINI_ENGINE_TRACE"))
_LOG: list = []


def _summary(name, tensor):
    return (name, tuple(tensor.shape), tensor.abs().amax(), tensor.isfinite().all())


def record_collective(name, tensor):
    entry = _summary(name, tensor)
    if _ENABLED:
        _LOG.append(entry)
'''


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise SystemExit(f"cold_repo: {path.name} no longer holds {old!r}: the sample changed")
    path.write_text(text.replace(old, new, 1))


def _append(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((path.read_text() if path.exists() else "") + text)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def steps(dest: Path) -> list[tuple[str, Callable[[], object]]]:
    """The ten commits on top of the sample: each a subject and the change it makes."""
    state = dest / "mini_engine/distributed/parallel_state.py"
    config = dest / "mini_engine/config.py"

    def tracing() -> None:
        _write(dest / "mini_engine/utils/__init__.py", "")
        _write(dest / "mini_engine/utils/trace.py", TRACE)

    def traced_allreduce() -> None:
        imported = "from .pynccl import PyNcclCommunicator\n"
        _edit(state, imported, "from ..utils.trace import record_collective\n" + imported)
        pad = "    padded = _pad_to_graph_size(input_.contiguous())\n"
        _edit(
            state, pad, pad.replace("    padded", '    record_collective("all_reduce", input_)\n    padded')
        )

    return [
        ("docs: how the scheduler orders requests", lambda: _append(dest / "README.md", README_NOTE)),
        ("config: read the world size from WORLD_SIZE", lambda: _append(config, WORLD_NOTE)),
        ("tests: the sampler keeps the top k", lambda: _write(dest / "tests/test_sampling.py", TEST)),
        ("utils: debug tracing of collectives (off by default)", tracing),
        ("distributed: trace the allreduce when MINI_ENGINE_TRACE is set", traced_allreduce),
        ("ci: cache pip downloads", lambda: _write(dest / ".github/workflows/cache.txt", "pip\n")),
        (CULPRIT, lambda: _write(dest / "mini_engine/utils/trace.py", TRACE_SLOW)),
        (
            "scheduler: a clearer name for the queue",
            lambda: _append(dest / "mini_engine/scheduler.py", QUEUE),
        ),
        ("docs: changelog for 0.3", lambda: _write(dest / "CHANGELOG.md", "# 0.3\n\n- tracing\n")),
        ("config: say why bfloat16 is the default", lambda: _append(config, DTYPE_NOTE)),
    ]


README_NOTE = "\nRequests run oldest first.\n"
WORLD_NOTE = "\n# WORLD_SIZE, when set, overrides the detected world size.\n"
TEST = "def test_top_k():\n    assert True\n"
QUEUE = "\n# The queue holds requests oldest first.\n"
DTYPE_NOTE = "\n# bfloat16: the GPUs' fast path.\n"


def build_cold(dest: Path) -> dict:
    manifest = build(dest)
    good, parent = manifest["head"], manifest["head"]
    commits = []
    when = START + timedelta(days=30)
    for number, (subject, change) in enumerate(steps(dest)):
        change()
        git(dest, "add", "--all")
        parent = commit(dest, subject, when + timedelta(hours=number), parent)
        commits.append({"sha": parent, "subject": subject})
    culprit = next(c for c in commits if c["subject"] == CULPRIT)
    return {"path": str(dest), "good": good, "bad": parent, "culprit": culprit["sha"], "commits": commits}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python benchmarks/cold_repo.py DEST", file=sys.stderr)
        return 2
    print(json.dumps(build_cold(Path(args[0])), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
