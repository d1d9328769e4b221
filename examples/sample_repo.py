"""Build the sample target repository: a tensor-parallel "mini engine" with ten commits, one of which
(touching ``pynccl.py`` and ``parallel_state.py``) slows down the allreduce path.

    python examples/sample_repo.py DEST     # prints a JSON manifest of the commits

What it holds, and why its SHAs are the same on every machine, is said in ``bot/sandbox/sample.py``,
which builds it (`perfbot sandbox` benchmarks it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bot.sandbox.sample import (  # noqa: F401 (the docs, benchmarks and tests import them from here)
    HISTORY,
    PARALLEL_STATE,
    PARALLEL_STATE_SLOW,
    PERFBOT_YML,
    PYNCCL,
    PYNCCL_SLOW,
    SLOW_SUBJECT,
    build,
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python examples/sample_repo.py DEST", file=sys.stderr)
        return 2
    try:
        manifest = build(Path(args[0]))
    except FileExistsError as error:
        print(f"sample_repo: {error}", file=sys.stderr)
        return 2
    print(json.dumps(manifest, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
