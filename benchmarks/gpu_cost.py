"""What a verdict costs on the GPU machine: seconds per round, `perfbot bench run` start to verdict on
the sample repository's slow commit (A/B) and on its parent against itself (A/A), each with a fresh
process per round and with the suite's long-lived worker per side (``worker: true``), and `perfbot
bisect` over the sample's whole history (with the worker); with ``--before DIR``, the same A/B with the
perfbot checkout in DIR (an earlier version), side by side in the same run on the same machine.

    python benchmarks/gpu_cost.py --out DIR [--before PERFBOT_CHECKOUT] [--skip-bisect] [--skip-aa]
                                  [--skip-worker] [--python PY] [--rounds N]

Run from a perfbot checkout on the GPU machine (perfbot's dependencies importable by ``--python``, the
engine's interpreter with torch). Every run's results file and log land in DIR; the last lines are a
table of the figures docs/benchmarks.md records. Seconds per round are each counted round's own
(its processes' wall time, from the results file, or from the progress log of a version that did
not record them); start to verdict is the wall time of the whole command.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples import sample_repo  # noqa: E402

SAFE = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
    "PYTHONUNBUFFERED": "1",
}
# The sample's suite in the keys an earlier perfbot knows (its config schema refuses unknown keys).
PLAIN_CONFIG = """\
version: 1
bench:
  rounds: 5
  warmup: 1
  suites:
    verify-step:
      kind: verify-step
      allreduce: mini_engine.distributed.parallel_state:tensor_model_parallel_all_reduce
"""


def perfbot(
    tree: Path, python: str, args: list[str], log: Path, timeout: float, stdout: Path | None = None
) -> tuple[int, float]:
    """Run ``python -m bot ARGS`` from the perfbot checkout ``tree``, its progress into ``log`` (and
    its output into ``stdout``, if given, else the log too); (exit status, wall seconds)."""
    env = {
        **os.environ,
        **SAFE,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])),
    }
    began = time.monotonic()
    with log.open("w") as stream, (stdout or log).open("a") as output:
        try:
            code = subprocess.run(
                [python, "-m", "bot", *args],
                cwd=tree,
                env=env,
                stderr=stream,
                stdout=output if stdout else stream,
                timeout=timeout,
            ).returncode
        except subprocess.TimeoutExpired:
            code = 124
    return code, time.monotonic() - began


def verdict(tree: Path, python: str, results: Path) -> dict:
    path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [python, "-m", "bot", "compare", str(results), "--format", "json"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
    )
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"verdict": "error", "headline": done.stderr.strip()[-200:]}


def round_seconds(results: Path, log: Path) -> list[float]:
    """Each counted round's seconds: recorded in the file, else read from the progress lines."""
    try:
        recorded = [r["seconds"] for r in json.loads(results.read_text())["rounds"] if "seconds" in r]
    except (OSError, ValueError, KeyError):
        recorded = []
    if recorded:
        return recorded
    lines = log.read_text().splitlines()
    seconds, counted = [], False
    for line in lines:
        if re.search(r": round \d+/\d+", line):
            counted = True
        elif counted and (found := re.search(r"ok in ([\d.]+)s", line)):
            seconds.append(float(found.group(1)))
            counted = False
    return seconds


def bench(
    label: str,
    tree: Path,
    python: str,
    sample: Path,
    base: str,
    head: str | None,
    out: Path,
    config: Path | None,
    rounds: int,
) -> dict:
    results, log = out / f"{label}.json", out / f"{label}.log"
    args = [
        "bench",
        "run",
        "--repo",
        str(sample),
        "--base",
        base,
        "--suite",
        "verify-step",
        "--python",
        python,
        "--rounds",
        str(rounds),
        "--max-rounds",
        str(rounds + 2),
        "--warmup",
        "1",
        "--timeout",
        "240",
        "--out",
        str(results),
    ]
    args += ["--head", head] if head else ["--aa"]
    if config is not None:
        args += ["--config", str(config)]
    code, wall = perfbot(tree, python, args, log, 900)
    judged = verdict(tree, python, results)
    per_round = round_seconds(results, log)
    kernels = judged.get("kernels") or {}
    return {
        "run": label,
        "exit": code,
        "wall_s": round(wall, 1),
        "verdict": judged.get("verdict"),
        "headline": judged.get("headline"),
        "rounds": len(per_round),
        "round_s_median": round(statistics.median(per_round), 2) if per_round else None,
        "round_s_mean": round(statistics.fmean(per_round), 2) if per_round else None,
        "kernels_changed": kernels.get("changed"),
    }


def bisect(tree: Path, python: str, manifest: dict, out: Path, rounds: int, config: Path | None) -> dict:
    folder, log, report_file = out / "bisect", out / "bisect.log", out / "bisect.json"
    args = [
        "bisect",
        manifest["first"],
        manifest["head"],
        "--repo",
        manifest["path"],
        "--suite",
        "verify-step",
        "--rounds",
        str(rounds),
        "--max-rounds",
        str(rounds + 2),
        "--warmup",
        "0",
        "--timeout",
        "240",
        "--out",
        str(folder),
        "--format",
        "json",
        "--python",
        python,
    ]
    if config is not None:
        args += ["--config", str(config)]
    code, wall = perfbot(tree, python, args, log, 900, report_file)
    try:
        report = json.loads(report_file.read_text())
    except ValueError:
        report = {}
    culprit = (report.get("culprit") or {}).get("sha", "")
    return {
        "run": "bisect",
        "exit": code,
        "wall_s": round(wall, 1),
        "metric": report.get("metric"),
        "culprit_is_the_slow_commit": culprit == manifest["slow"],
        "runs": report.get("runs"),
        "conclusion": report.get("conclusion"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--before", type=Path, help="a perfbot checkout of an earlier version")
    parser.add_argument("--python", default=sys.executable, help="the engine's interpreter (with torch)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-bisect", action="store_true")
    parser.add_argument("--skip-aa", action="store_true")
    parser.add_argument("--skip-worker", action="store_true", help="fresh processes only")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sample = Path(tempfile.mkdtemp()) / "sample"
    manifest = sample_repo.build(sample)
    (out / "sample-manifest.json").write_text(json.dumps(manifest, indent=2))
    plain = out / "plain-config.yml"
    plain.write_text(PLAIN_CONFIG)
    served = out / "worker-config.yml"  # the sample's own config, its rounds served by a worker
    served.write_text(sample_repo.PERFBOT_YML + "      worker: true\n")
    rows = []
    before, slow = manifest["before_slow"], manifest["slow"]
    if args.before:
        rows.append(
            bench(
                "before-ab",
                args.before.resolve(),
                args.python,
                sample,
                manifest["before_slow"],
                manifest["slow"],
                out,
                plain,
                args.rounds,
            )
        )
        print(json.dumps(rows[-1]), flush=True)
    rows.append(
        bench(
            "ab", ROOT, args.python, sample, manifest["before_slow"], manifest["slow"], out, None, args.rounds
        )
    )
    print(json.dumps(rows[-1]), flush=True)
    if not args.skip_worker:
        rows.append(bench("ab-worker", ROOT, args.python, sample, before, slow, out, served, args.rounds))
        print(json.dumps(rows[-1]), flush=True)
    if not args.skip_aa:
        rows.append(bench("aa", ROOT, args.python, sample, before, None, out, None, args.rounds))
        print(json.dumps(rows[-1]), flush=True)
        if not args.skip_worker:
            rows.append(bench("aa-worker", ROOT, args.python, sample, before, None, out, served, args.rounds))
            print(json.dumps(rows[-1]), flush=True)
    if not args.skip_bisect:
        rows.append(
            bisect(ROOT, args.python, manifest, out, args.rounds, None if args.skip_worker else served)
        )
        print(json.dumps(rows[-1]), flush=True)
    (out / "cost.json").write_text(json.dumps(rows, indent=2))
    print("\n| run | exit | wall s | verdict / culprit | counted rounds | s per round (median, mean) |")
    print("|---|---:|---:|---|---:|---|")
    for row in rows:
        outcome = row.get("verdict") or (
            f"culprit found: {row.get('culprit_is_the_slow_commit')}, "
            f"on {row.get('metric')}, runs {row.get('runs')}"
        )
        print(
            f"| {row['run']} | {row['exit']} | {row['wall_s']} | {outcome} | {row.get('rounds', '')} | "
            f"{row.get('round_s_median', '')}, {row.get('round_s_mean', '')} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
