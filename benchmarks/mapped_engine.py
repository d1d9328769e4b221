"""The gate with and without a map made from the engine's own profiler, on a labelled history where
one can be made here: the engine-shaped model whose CPU trace torch's profiler wrote
(tests/runner/trace_engine), committed as the base of a history of 35 later commits, 8 of them
labelled culprits (each a slowdown of the profiled step, of a kind the issue names or a plain one)
and 27 that are not (docs, tests, a CLI, set-up code, error paths, and two decoys in hot files).
The culprits and the other commits were written down before any of them was scored, and nothing in
the rules was changed after.

The map is `perfbot map`'s (`bot.runner.trace_map.build`) of the kept trace at the base commit, as
the App would have stored it from main; every culprit's range is the whole history (base..last), so
its rank is among the 27 other commits, as `perfbot triage` ranks them.
`benchmarks/operating_point.py` scores the set (`score_set`, `map_report`) without and with the map.

    .venv/bin/python benchmarks/mapped_engine.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import operating_point as op  # noqa: E402

from bot.adapters.git_repo import GitRepo  # noqa: E402
from bot.core.config.schema import RepoConfig  # noqa: E402
from bot.core.risk import profiles, ruleset  # noqa: E402
from bot.runner import trace_map  # noqa: E402

ENGINE = ROOT / "tests" / "runner" / "trace_engine"
STATE = "engine/distributed/parallel_state.py"

# Files beside the traced engine at the base commit: none of them runs in a step.
EXTRA = {
    "README.md": "# engine\n\nA small tensor-parallel engine.\n",
    "docs/usage.md": "# Usage\n\nRun `python -m engine.cli`.\n",
    "pyproject.toml": '[project]\nname = "engine"\nversion = "0.1.0"\n',
    "tests/test_config.py": "from engine.config import EngineConfig\n\n\ndef test_defaults():\n"
    "    assert EngineConfig().layers == 2\n",
    "engine/cli.py": "import argparse\n\n\ndef parse(argv=None):\n    parser = argparse.ArgumentParser()\n"
    '    parser.add_argument("--layers", type=int, default=2)\n    return parser.parse_args(argv)\n',
    "engine/utils/logging_utils.py": "import logging\n\n\ndef setup(level=logging.INFO):\n"
    '    logging.basicConfig(level=level, format="%(message)s")\n',
    "benchmarks/bench_latency.py": "import time\n\nfrom engine.config import EngineConfig\n"
    "from engine.scheduler import Scheduler\n\n\ndef main():\n    s = Scheduler(EngineConfig())\n"
    "    began = time.perf_counter()\n    for _ in range(10):\n        s.step()\n"
    "    print(time.perf_counter() - began)\n",
}

# (subject, culprit?, path, old text, new text): each commit one replacement (old "" appends).
HISTORY: list[tuple[str, bool, str, str, str]] = [
    ("docs: say how to install", False, "README.md", "", "\nInstall with `pip install -e .`.\n"),
    (
        "Sync the tensor-parallel allreduce by default (#11)",
        True,
        "engine/config.py",
        "sync_allreduce: bool = False",
        "sync_allreduce: bool = True",
    ),
    (
        "tests: layers default",
        False,
        "tests/test_config.py",
        "",
        "\n\ndef test_hidden():\n    assert EngineConfig().hidden > 0\n",
    ),
    (
        "cli: --hidden",
        False,
        "engine/cli.py",
        "    return parser.parse_args(argv)\n",
        '    parser.add_argument("--hidden", type=int, default=32)\n    return parser.parse_args(argv)\n',
    ),
    (
        "Time the traced calls on the device (#14)",
        True,
        "engine/utils/tracing.py",
        "            out = fn(*args, **kwargs)\n",
        "            out = fn(*args, **kwargs)\n            torch.cuda.synchronize()\n",
    ),
    ("docs: usage of --hidden", False, "docs/usage.md", "", "\n`--hidden N` sets the hidden size.\n"),
    (
        "Clearer message when the process group is missing",
        False,
        STATE,
        'call init_process_group first"',
        'call torch.distributed.init_process_group() first"',
    ),
    (
        "Check activations for NaN by default (#17)",
        True,
        "engine/envs.py",
        'os.environ.get("ENGINE_CHECK_FINITE", "0")',
        'os.environ.get("ENGINE_CHECK_FINITE", "1")',
    ),
    ("bump version to 0.1.1", False, "pyproject.toml", 'version = "0.1.0"', 'version = "0.1.1"'),
    (
        "logging: a format with the time",
        False,
        "engine/utils/logging_utils.py",
        'format="%(message)s"',
        'format="%(asctime)s %(message)s"',
    ),
    (
        "Do not let the allreduce write into its caller's tensor (#21)",
        True,
        STATE,
        "    dist.all_reduce(x, group=group)\n",
        "    x = x.clone()\n    dist.all_reduce(x, group=group)\n",
    ),
    (
        "Add destroy_tp_group",
        False,
        STATE,
        "\n\ndef _group_error(group):",
        "\n\ndef destroy_tp_group():\n    global _TP_GROUP\n    _TP_GROUP = None\n"
        "\n\ndef _group_error(group):",
    ),
    (
        "bench: warm up before timing",
        False,
        "benchmarks/bench_latency.py",
        "    began = time.perf_counter()\n",
        "    s.step()\n    began = time.perf_counter()\n",
    ),
    (
        "Keep the row-parallel output in float32 (#25)",
        True,
        "engine/layers/linear.py",
        "        out = tensor_model_parallel_all_reduce(x @ self.weight)\n",
        "        out = tensor_model_parallel_all_reduce((x @ self.weight).float()).to(x.dtype)\n",
    ),
    (
        "Fail early when the TP group is requested before init",
        False,
        STATE,
        "    if _TP_GROUP is None:\n        _TP_GROUP = dist.group.WORLD\n",
        "    if _TP_GROUP is None:\n        if not dist.is_initialized():\n"
        '            raise RuntimeError("init_process_group first")\n        _TP_GROUP = dist.group.WORLD\n',
    ),
    ("docs: the engine's layout", False, "docs/usage.md", "", "\nThe model runner steps the layers.\n"),
    (
        "Scale the initial weights by the layer count",
        False,
        "engine/layers/linear.py",
        "        self.weight = torch.randn(hidden, hidden) / hidden**0.5\n",
        "        self.weight = torch.randn(hidden, hidden) / (2 * hidden) ** 0.5\n",
    ),
    (
        "Log the activation norm of each layer (#30)",
        True,
        "engine/model_runner.py",
        "            x = layer.forward(x)\n",
        "            x = layer.forward(x)\n            self.norms.append(x.norm().item())\n",
    ),
    (
        "model runner: keep the activation norms",
        False,
        "engine/model_runner.py",
        "        self.config = config\n",
        "        self.config = config\n        self.norms = []\n",
    ),
    (
        "tests: a check of the cli",
        False,
        "tests/test_config.py",
        "",
        "\n\ndef test_cli():\n    from engine.cli import parse\n\n    assert parse([]).layers == 2\n",
    ),
    (
        "tracing: report the timings",
        False,
        "engine/utils/tracing.py",
        "",
        "\n\ndef report():\n    for name, seconds in sorted(_TIMINGS.items()):\n"
        '        print(f"{name}: {seconds:.3f} s")\n',
    ),
    (
        "envs: ENGINE_LOG_LEVEL",
        False,
        "engine/envs.py",
        "",
        'ENGINE_LOG_LEVEL = os.environ.get("ENGINE_LOG_LEVEL", "INFO")\n',
    ),
    (
        "Build a fresh batch every step (#36)",
        True,
        "engine/scheduler.py",
        "    def step(self):\n",
        "    def step(self):\n        self.batch = make_batch(self.runner.config)\n",
    ),
    ("bump version to 0.1.2", False, "pyproject.toml", 'version = "0.1.1"', 'version = "0.1.2"'),
    (
        "scheduler: stats",
        False,
        "engine/scheduler.py",
        "",
        '\n    def stats(self):\n        return {"layers": len(self.runner.layers)}\n',
    ),
    ("README: badges", False, "README.md", "# engine\n", "# engine\n\n![tests](badge.svg)\n"),
    (
        "Larger default hidden size (#40)",
        True,
        "engine/config.py",
        "hidden: int = 32",
        "hidden: int = 64",
    ),
    (
        "cli: --sync-allreduce",
        False,
        "engine/cli.py",
        "    return parser.parse_args(argv)\n",
        '    parser.add_argument("--sync-allreduce", action="store_true")\n'
        "    return parser.parse_args(argv)\n",
    ),
    ("docs: the allreduce", False, "docs/usage.md", "", "\nThe allreduce can be synchronised.\n"),
    (
        "logging: setup takes a name",
        False,
        "engine/utils/logging_utils.py",
        "def setup(level=logging.INFO):\n",
        "def setup(level=logging.INFO, name=None):\n",
    ),
    (
        "bench: more steps",
        False,
        "benchmarks/bench_latency.py",
        "range(10)",
        "range(50)",
    ),
    (
        "tests: sync default",
        False,
        "tests/test_config.py",
        "",
        "\n\ndef test_sync():\n    assert isinstance(EngineConfig().sync_allreduce, bool)\n",
    ),
    (
        "tracing: name the wrapper after its function",
        False,
        "engine/utils/tracing.py",
        "def traced(name):\n",
        "def traced(name):\n    # the wrapper keeps the function's name (functools.wraps)\n",
    ),
    ("docs: contributing", False, "docs/usage.md", "", "\nSend a pull request.\n"),
    ("bump version to 0.2.0", False, "pyproject.toml", 'version = "0.1.2"', 'version = "0.2.0"'),
]


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "engine",
        "GIT_AUTHOR_EMAIL": "engine@example.com",
        "GIT_COMMITTER_NAME": "engine",
        "GIT_COMMITTER_EMAIL": "engine@example.com",
        "GIT_AUTHOR_DATE": "2026-12-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-12-01T00:00:00Z",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def build(repo: Path) -> tuple[str, list[tuple[str, str, bool]]]:
    """The history in ``repo``: the base commit, and (sha, subject, culprit?) of each later one."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    shutil.copytree(ENGINE / "engine", repo / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in EXTRA.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "engine as profiled")
    base = git(repo, "rev-parse", "HEAD")
    made = []
    for subject, culprit, path, old, new in HISTORY:
        text = (repo / path).read_text()
        if old:
            if text.count(old) != 1:
                raise SystemExit(f"{subject}: {old!r} is not once in {path}")
            text = text.replace(old, new)
        else:
            text += new
        if path == "engine/utils/tracing.py" and "torch." in text and "import torch" not in text:
            text = "import torch\n" + text  # the sync needs torch; one line more, same commit
        (repo / path).write_text(text)
        git(repo, "commit", "-qam", subject)
        made.append((git(repo, "rev-parse", "HEAD"), subject, culprit))
    return base, made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", dest="json_out", help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        repo_path = Path(scratch) / "engine"
        base, made = build(repo_path)
        repo = GitRepo.open(repo_path)
        data = trace_map.read(ENGINE / "trace.json.gz")
        resolve = trace_map.resolved(
            trace_map.file_names(data), lambda paths: repo.existing_paths(base, paths)
        )
        mapped = trace_map.build(data, resolve, lambda path: repo.show(base, path), base, "profiled step")
        (Path(scratch) / "map.json").write_text(json.dumps(mapped.to_dict()))
        head = made[-1][0]
        labelled = {
            "regressions": [
                {
                    "culprit": {"sha": sha, "subject": subject},
                    "range": {"base": base, "head": head},
                    "map": "map.json",
                }
                for sha, subject, culprit in made
                if culprit
            ]
        }
        config = RepoConfig()
        rules = ruleset.build(config, repo.existing_paths(head, profiles.MARKERS))
        found = op.score_set(repo, rules, labelled, Path(scratch))
        thresholds = config.risk.thresholds.model_dump()
        figures = op.map_report(found, thresholds)
    assert figures is not None
    figures["thresholds"] = thresholds
    print(
        f"{len(made)} commits after the base, {figures['culprits']} culprits; "
        f"map: {len(mapped.functions)} functions over {mapped.steps} profiled steps; thresholds {thresholds}"
    )
    print(f"{'culprit':<62} {'without':>8} {'with':>6}")
    for row in figures["scores"]:
        print(f"{row['subject'][:62]:<62} {row['without']:>8} {row['with']:>6}")
    print("\n".join(op.render_maps({"engine": figures})))
    subjects = {sha: subject for sha, subject, _ in made}
    for side, culprit in (("without", found[0]), ("with", found[0].mapped)):
        assert culprit is not None
        flagged = [
            f"{subjects[sha]} ({score})"
            for sha, score in zip(culprit.range_shas, culprit.range_scores, strict=True)
            if score >= thresholds["medium"]
        ]
        print(f"other commits at medium or above {side} the map: {'; '.join(flagged) or 'none'}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
