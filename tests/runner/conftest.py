"""Fixtures of the runner tests: small real repositories whose benchmark is a shell script."""

from __future__ import annotations

import pytest

# Prints one metric from the revision's speed.txt; the round number makes values differ a little.
BENCH_SH = """\
speed=$(cat speed.txt)
echo "warming up"
echo "PERFBOT_METRIC step_ms=$((speed * 100 + PERFBOT_ROUND % 3)) unit=ms better=lower"
"""


@pytest.fixture
def bench_repo(git_builder):
    """A repository with two commits: base (step_ms about 1000) and head (about 2000)."""
    base = git_builder.commit("base", {"bench.sh": BENCH_SH, "speed.txt": "10\n"})
    head = git_builder.commit("head: slower", {"speed.txt": "20\n"})
    return git_builder.root, base, head
