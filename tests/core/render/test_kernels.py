"""The kernel diff as the PR comment and the terminal show it: golden files from the H200 runs of the
sample's slow commit and of its parent against itself, and kernel names that cannot escape."""

from __future__ import annotations

import re
from pathlib import Path

from bot.core.judge import profile, results, stats
from bot.core.render import compare as render_compare
from bot.core.render.kernels import MAX_KERNEL_ROWS, kernels_markdown, kernels_text
from tests.core.judge.profile_data import PADDED
from tests.core.judge.profile_data import profile as make_profile

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "h200-verdict"


def diff_of(name: str) -> profile.ProfileDiff:
    loaded = results.load((RESULTS / name).read_bytes(), name)
    d = profile.diff_of(loaded.base.profile, loaded.head.profile)
    assert d is not None
    return d


def test_the_slow_commit_s_kernel_table_matches_its_golden_file(file_regression):
    file_regression.check(kernels_markdown(diff_of("r3/ab.json")), extension=".md", basename="kernels_slow_commit")


def test_the_a_a_kernel_table_matches_its_golden_file(file_regression):
    file_regression.check(kernels_markdown(diff_of("r3/aa.json")), extension=".md", basename="kernels_a_a")


def test_the_terminal_lines_match_their_golden_file(file_regression):
    file_regression.check("\n".join(kernels_text(diff_of("r3/ab.json"))) + "\n", extension=".txt",
                          basename="kernels_slow_commit_text")


def test_the_compare_report_carries_the_table_collapsed_between_environment_and_rounds():
    loaded = results.load((RESULTS / "r3" / "ab.json").read_bytes())
    markdown = render_compare.compare_markdown(loaded, stats.decide(loaded))
    assert markdown.index("**Environment.**") < markdown.index("<details><summary>Kernels (GPU kernels") \
        < markdown.index("<details><summary>Per-round values")
    assert markdown.count("<details>") == markdown.count("</details>") == 3


def test_a_hostile_kernel_name_stays_inside_its_code_span_and_its_row():
    hostile = "</details><img src=x onerror=alert(1)>|`@team` **x**\n# h"
    d = profile.diff(make_profile(PADDED), make_profile([*PADDED, (hostile, 3, 50.0)]))
    markdown = kernels_markdown(d)
    [row] = [line for line in markdown.splitlines() if "img src" in line]
    assert row.count("`") == 2 and "\\|" in row and row.count(" | ") == 4
    # Inside a code span HTML is text; outside every code span only the block's own tag is left.
    assert re.sub(r"`[^`]*`", "", markdown).count("</details>") == 1
    assert not re.search(r"^# h", markdown, re.M)
    assert all("\x1b" not in line for line in kernels_text(d))


def test_a_long_list_of_changed_kernels_is_cut_and_says_so():
    many = [(f"kernel_{i}", 1, 1.0) for i in range(MAX_KERNEL_ROWS + 5)]
    markdown = kernels_markdown(profile.diff(make_profile(PADDED), make_profile([*PADDED, *many])))
    assert "…and 5 more kernels that changed" in markdown
