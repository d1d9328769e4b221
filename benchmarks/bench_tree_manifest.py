"""Benchmark what the integrity checks of `perfbot bench run` cost per round (`bot.runner.integrity`).

Before every round perfbot walks the side's worktree and compares it with the manifest taken when
that side's last round ended, and takes it again after the round: two manifests and a comparison
per round. Each folder of the engine's import path costs one manifest and one comparison per round.
This times one manifest (a walk: every entry's lstat) and one comparison, on a generated tree
shaped like an SGLang checkout (about 5,000 files in nested packages, with ``__pycache__`` folders,
as a worktree has after a round), and on any folders named on the command line (a real checkout,
an engine's site-packages). Each figure is the median of ``--repeat`` runs, after one warm-up walk
(the page cache holds the tree during a benchmark run).

    python benchmarks/bench_tree_manifest.py                     # the generated 5,000-file tree
    python benchmarks/bench_tree_manifest.py --files 20000 --repeat 21
    python benchmarks/bench_tree_manifest.py ~/src/sglang /opt/engine/lib/python3.12/site-packages
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.runner.integrity import changes, manifest  # noqa: E402


def generate(root: Path, files: int) -> None:
    """Packages of 12 modules (and their bytecode), 3 deep, until ``files`` files exist."""
    made = 0
    package = 0
    while made < files:
        folder = root / "python" / f"pkg{package // 100}" / f"sub{package // 10}" / f"mod{package}"
        (folder / "__pycache__").mkdir(parents=True)
        for number in range(6):
            if made >= files:
                break
            (folder / f"m{number}.py").write_text(f"X = {number}\n" * 20)
            (folder / "__pycache__" / f"m{number}.cpython-311.pyc").write_bytes(b"\0" * 300)
            made += 2
        package += 1


def timed(root: Path, repeat: int) -> tuple[int, float, float]:
    """Entries, and the median milliseconds of one manifest and of one comparison."""
    reference = manifest(root)
    walks, compares = [], []
    for _ in range(repeat):
        began = time.perf_counter()
        now = manifest(root)
        walks.append(time.perf_counter() - began)
        began = time.perf_counter()
        if changes(reference, now):
            raise SystemExit(f"{root} changed while it was timed")
        compares.append(time.perf_counter() - began)
    return len(reference), 1000 * statistics.median(walks), 1000 * statistics.median(compares)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, help="real folders to time as well")
    parser.add_argument("--files", type=int, default=5000, help="files in the generated tree (default 5000)")
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfbot-manifest-") as scratch:
        generated = Path(scratch)
        generate(generated, args.files)
        print(
            f"{'tree':<48} {'entries':>8} {'manifest ms':>12} {'compare ms':>11} {'worktree/round':>15} "
            f"{'engine/round':>13}"
        )
        for label, root in [
            (f"generated ({args.files} files)", generated),
            *((str(folder), folder) for folder in args.folders),
        ]:
            entries, walk, compare = timed(root, args.repeat)
            worktree, engine = 2 * walk + compare, walk + compare
            print(
                f"{label[-48:]:<48} {entries:>8} {walk:>12.1f} {compare:>11.1f} {worktree:>15.1f} "
                f"{engine:>13.1f}"
            )


if __name__ == "__main__":
    main()
