"""The sample target repository: a tensor-parallel "mini engine" with ten commits, one of which
(touching ``pynccl.py`` and ``parallel_state.py``) slows down the allreduce path. The sandbox
benchmarks it; ``examples/sample_repo.py`` builds it for the docs, benchmarks and tests.

Its benchmark is the `verify-step` suite, configured in its ``.github/perfbot.yml`` to send every
allreduce through ``mini_engine.distributed.parallel_state.tensor_model_parallel_all_reduce`` (two
gloo ranks on a machine without GPUs, with the kernel profile on), so the slow commit shows up in
verify time at any world size: it pads every allreduce input to the size the piecewise CUDA graphs
were captured for (a memset of 65536 tokens and a copy per call, replayed by every graph, as the
motivating commit's padding memsets were), and at two ranks or more its communicator also reduces
out of place with a host synchronisation per call. The commits have fixed authors and dates, and
are written with git's plumbing (the message exactly as given), so their SHAs are the same on
every machine.
"""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

SLOW_SUBJECT = "Fix PCG MoE error"
# What `build` makes of them on every machine (a test checks): the slow commit and its parent.
SLOW_SHA = "3e4bb76d9da013e8b68744a70392fbfbc90e4881"
BEFORE_SLOW_SHA = "5efac9d9d419c62e9688771b6923a7429c927fde"
AUTHOR = ("Mini Engine Dev", "dev@mini-engine.example")
START = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)

PERFBOT_YML = """\
version: 1
risk:
  profile: generic
bench:
  rounds: 5
  warmup: 1
  suites:
    verify-step:
      kind: verify-step
      allreduce: mini_engine.distributed.parallel_state:tensor_model_parallel_all_reduce
      cpu_world_size: 2
      profile: true
"""

PYNCCL = '''\
"""NCCL communicator of the mini engine: the allreduce that every layer of a forward pass runs."""

import torch
import torch.distributed as dist


class PyNcclCommunicator:
    def __init__(self, group=None):
        self.group = group
        self.world_size = dist.get_world_size(group)

    def all_reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` over the group, in place, and return it."""
        dist.all_reduce(tensor, group=self.group)
        return tensor
'''

PYNCCL_SLOW = '''\
"""NCCL communicator of the mini engine: the allreduce that every layer of a forward pass runs."""

import torch
import torch.distributed as dist


class PyNcclCommunicator:
    def __init__(self, group=None):
        self.group = group
        self.world_size = dist.get_world_size(group)

    def all_reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` over the group into a new tensor."""
        # PCG MoE kept a view of the input alive across the collective: reduce out of place and
        # make sure the result is complete before handing it back.
        out = tensor.clone()
        dist.all_reduce(out, group=self.group)
        if out.is_cuda and not torch.cuda.is_current_stream_capturing():
            torch.cuda.synchronize()
        return out
'''

PARALLEL_STATE = '''\
"""Tensor-parallel state of the mini engine: the group and its communicator."""

import torch
import torch.distributed as dist

from .pynccl import PyNcclCommunicator

_TP_COMMUNICATOR = None


def get_tp_communicator() -> PyNcclCommunicator:
    global _TP_COMMUNICATOR
    if _TP_COMMUNICATOR is None:
        _TP_COMMUNICATOR = PyNcclCommunicator()
    return _TP_COMMUNICATOR


def tensor_model_parallel_all_reduce(input_: torch.Tensor) -> torch.Tensor:
    if dist.get_world_size() == 1:
        return input_
    return get_tp_communicator().all_reduce(input_)
'''

PARALLEL_STATE_SLOW = PARALLEL_STATE.replace(
    "_TP_COMMUNICATOR = None\n",
    "_TP_COMMUNICATOR = None\n"
    "# Piecewise CUDA graphs are captured for this many tokens.\n"
    "_GRAPH_TOKENS = 65536\n",
).replace(
    "def tensor_model_parallel_all_reduce(input_: torch.Tensor) -> torch.Tensor:\n"
    "    if dist.get_world_size() == 1:\n"
    "        return input_\n"
    "    return get_tp_communicator().all_reduce(input_)\n",
    "def _pad_to_graph_size(input_: torch.Tensor) -> torch.Tensor:\n"
    '    """``input_`` in a zeroed buffer of the captured size, so that PCG MoE buffers line up."""\n'
    "    padded = torch.zeros((max(_GRAPH_TOKENS, input_.shape[0]), *input_.shape[1:]),\n"
    "                         dtype=input_.dtype, device=input_.device)\n"
    "    padded[: input_.shape[0]].copy_(input_)\n"
    "    return padded[: input_.shape[0]]\n"
    "\n\n"
    "def tensor_model_parallel_all_reduce(input_: torch.Tensor) -> torch.Tensor:\n"
    "    # Pad before the single-rank shortcut: eager and graphed passes must see the same buffers.\n"
    "    padded = _pad_to_graph_size(input_.contiguous())\n"
    "    if dist.get_world_size() == 1:\n"
    "        return padded\n"
    "    # The communicator now returns a new tensor; callers must use the return value.\n"
    "    output = get_tp_communicator().all_reduce(padded)\n"
    "    return output\n",
)


SAMPLING = '''\
"""Token sampling of the mini engine."""

import torch


def sample_top_k(logits: torch.Tensor, k: int) -> torch.Tensor:
    values, indices = logits.topk(k, dim=-1)
    choice = torch.multinomial(torch.softmax(values, dim=-1), 1)
    return indices.gather(-1, choice).squeeze(-1)
'''

SAMPLING_TEMPERATURE = SAMPLING.replace(
    "def sample_top_k(logits: torch.Tensor, k: int) -> torch.Tensor:\n"
    "    values, indices = logits.topk(k, dim=-1)",
    "def sample_top_k(logits: torch.Tensor, k: int, temperature: float = 1.0) -> torch.Tensor:\n"
    "    values, indices = (logits / max(temperature, 1e-5)).topk(k, dim=-1)",
)

SCHEDULER = '''\
"""First-come first-served batching of the mini engine."""

from collections import deque


class Scheduler:
    def __init__(self, max_batch: int):
        self.max_batch = max_batch
        self.waiting = deque()

    def add(self, request) -> None:
        self.waiting.append(request)

    def next_batch(self) -> list:
        batch = []
        while self.waiting and len(batch) < self.max_batch:
            batch.append(self.waiting.popleft())
        return batch
'''

SCHEDULER_BUDGET = SCHEDULER.replace(
    "    def __init__(self, max_batch: int):\n        self.max_batch = max_batch\n",
    "    def __init__(self, max_batch: int, max_tokens: int = 8192):\n        self.max_batch = max_batch\n"
    "        self.max_tokens = max_tokens\n",
).replace(
    "        batch = []\n        while self.waiting and len(batch) < self.max_batch:\n"
    "            batch.append(self.waiting.popleft())\n",
    "        batch, tokens = [], 0\n        while self.waiting and len(batch) < self.max_batch:\n"
    "            if tokens + len(self.waiting[0]) > self.max_tokens:\n                break\n"
    "            tokens += len(self.waiting[0])\n            batch.append(self.waiting.popleft())\n",
)

CONFIG = '''\
"""Engine options."""

from dataclasses import dataclass


@dataclass
class EngineConfig:
    tp_size: int = 1
    max_batch: int = 32
'''

TEST_SAMPLING = """\
import torch

from mini_engine.sampling import sample_top_k


def test_top_1_sampling_is_greedy():
    logits = torch.tensor([[0.1, 3.0, 0.2]])
    assert sample_top_k(logits, 1).tolist() == [1]
"""

README = "# mini engine\n\nA tensor-parallel toy inference engine, used to demonstrate perfbot.\n"

# (subject, {path: text}) in commit order; the seventh is the slow one.
HISTORY: list[tuple[str, dict[str, str]]] = [
    (
        "Mini engine: tensor-parallel communicator, sampling, scheduler",
        {
            "README.md": README,
            ".github/perfbot.yml": PERFBOT_YML,
            "mini_engine/__init__.py": '"""A tensor-parallel toy inference engine."""\n',
            "mini_engine/distributed/__init__.py": "",
            "mini_engine/distributed/pynccl.py": PYNCCL,
            "mini_engine/distributed/parallel_state.py": PARALLEL_STATE,
            "mini_engine/sampling.py": SAMPLING,
            "mini_engine/scheduler.py": SCHEDULER,
            "mini_engine/config.py": CONFIG,
        },
    ),
    (
        "docs: how to run the engine",
        {"README.md": README + "\n## Usage\n\n    python -m mini_engine --tp-size 2\n"},
    ),
    ("sampling: temperature for top-k sampling", {"mini_engine/sampling.py": SAMPLING_TEMPERATURE}),
    ("tests: top-1 sampling is greedy", {"tests/test_sampling.py": TEST_SAMPLING}),
    ("scheduler: cap a batch by its token budget", {"mini_engine/scheduler.py": SCHEDULER_BUDGET}),
    (
        "ci: run the tests on pull requests",
        {
            ".github/workflows/ci.yml": "on: [pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
            "    steps:\n      - uses: actions/checkout@v4\n      - run: pytest\n"
        },
    ),
    (
        SLOW_SUBJECT,
        {
            "mini_engine/distributed/pynccl.py": PYNCCL_SLOW,
            "mini_engine/distributed/parallel_state.py": PARALLEL_STATE_SLOW,
        },
    ),
    ("config: max_tokens option", {"mini_engine/config.py": CONFIG + "    max_tokens: int = 8192\n"}),
    ("docs: changelog for 0.2", {"CHANGELOG.md": "# 0.2\n\n- temperature sampling\n- token budget\n"}),
    (
        "tests: scheduler respects max_batch",
        {
            "tests/test_scheduler.py": "from mini_engine.scheduler import Scheduler\n\n\n"
            "def test_batch_is_capped():\n    s = Scheduler(max_batch=2)\n"
            "    for r in ([1], [2], [3]):\n        s.add(r)\n"
            "    assert len(s.next_batch()) == 2\n"
        },
    ),
]


# Settings of the machine's git that would change what is written: signatures, line endings, hooks.
_GIT = ["git", "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", "-c", "core.hooksPath=/dev/null"]


def build(dest: Path) -> dict:
    """Create the repository at ``dest`` (which must not exist or be empty); return its manifest."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest}: exists and is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    git(dest, "init", "--quiet", "--initial-branch=main")
    commits: list[dict] = []
    for number, (subject, files) in enumerate(HISTORY):
        for path, text in files.items():
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        git(dest, "add", "--", *files)
        parent = commits[-1]["sha"] if commits else None
        sha = commit(dest, subject, START + timedelta(hours=number), parent)
        commits.append({"sha": sha, "subject": subject})
    slow = next(i for i, c in enumerate(commits) if c["subject"] == SLOW_SUBJECT)
    return {
        "path": str(dest),
        "commits": commits,
        "first": commits[0]["sha"],
        "head": commits[-1]["sha"],
        "slow": commits[slow]["sha"],
        "before_slow": commits[slow - 1]["sha"],
    }


def commit(repo: Path, message: str, when: datetime, parent: str | None) -> str:
    """Commit the index with ``message`` (exactly: no line break added) as the sample's author at
    ``when``, on top of ``parent``, and move the current branch to it; return its SHA."""
    stamp = f"{int(when.timestamp())} +0000"
    name, email = AUTHOR
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_COMMITTER_DATE": stamp,
    }
    tree = git(repo, "write-tree")
    sha = git(repo, "commit-tree", tree, *(["-p", parent] if parent else []), stdin=message, env=env)
    git(repo, "update-ref", "HEAD", sha)
    return sha


def git(repo: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [*_GIT, *args], cwd=repo, input=stdin, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]}: {done.stderr.strip() or done.returncode}")
    return done.stdout.strip()


def slow_diff() -> str:
    """The slow commit's change as a unified diff like `git diff`'s (made from the files' texts
    above, without git; its hunk headers name no function), for a pull request that carries it."""
    import difflib

    changed = HISTORY[_SLOW][1]
    before = _files_before(_SLOW)
    parts = []
    for path in sorted(changed):
        old, new = before[path], changed[path]
        lines = difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            f"a/{path}",
            f"b/{path}",
            lineterm="\n",
        )
        parts.append(
            f"diff --git a/{path} b/{path}\nindex {_blob(old)[:7]}..{_blob(new)[:7]} 100644\n"
            + "".join(lines)
        )
    return "".join(parts)


def _blob(text: str) -> str:
    """git's id of a file with ``text``."""
    import hashlib

    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def slow_files() -> dict[str, str]:
    """The files the slow commit changes, as it leaves them."""
    return dict(HISTORY[_SLOW][1])


def before_slow_files() -> dict[str, str]:
    """The files the slow commit changes, as they were before it."""
    before = _files_before(_SLOW)
    return {path: before[path] for path in HISTORY[_SLOW][1]}


def _files_before(index: int) -> dict[str, str]:
    files: dict[str, str] = {}
    for _, changed in HISTORY[:index]:
        files.update(changed)
    return files


_SLOW = next(i for i, (subject, _) in enumerate(HISTORY) if subject == SLOW_SUBJECT)
