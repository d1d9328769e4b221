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
    file_regression.check(
        kernels_markdown(diff_of("r3/ab.json")), extension=".md", basename="kernels_slow_commit"
    )


def test_the_a_a_kernel_table_matches_its_golden_file(file_regression):
    file_regression.check(kernels_markdown(diff_of("r3/aa.json")), extension=".md", basename="kernels_a_a")


def test_the_terminal_lines_match_their_golden_file(file_regression):
    file_regression.check(
        "\n".join(kernels_text(diff_of("r3/ab.json"))) + "\n",
        extension=".txt",
        basename="kernels_slow_commit_text",
    )


def test_the_compare_report_carries_the_table_collapsed_between_environment_and_rounds():
    loaded = results.load((RESULTS / "r3" / "ab.json").read_bytes())
    markdown = render_compare.compare_markdown(loaded, stats.decide(loaded))
    assert (
        markdown.index("**Environment.**")
        < markdown.index("<details><summary>Kernels (GPU kernels")
        < markdown.index("<details><summary>Per-round values")
    )
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


# ---------------------------------------------------------------- launching lines

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bot.core.judge.profile import LaunchSite  # noqa: E402
from bot.core.render.kernels import changed_lines  # noqa: E402
from bot.sandbox.sample import slow_diff  # noqa: E402
from tests.core.judge.profile_data import FILL, slow  # noqa: E402

PS, NCCL = "mini_engine/distributed/parallel_state.py", "mini_engine/distributed/pynccl.py"


def _with_sites(p: profile.Profile, sites: dict[str, list[LaunchSite]]) -> profile.Profile:
    return p.model_copy(
        update={"kernels": [k.model_copy(update={"sites": sites.get(k.name)}) for k in p.kernels]}
    )


def _sited_slow_commit() -> profile.ProfileDiff:
    """The slow commit's diff with launching lines: the fill from the padding (a line it added), the
    extra copy from the communicator (a line it added), the NCCL kernel from a line it left alone."""
    copy = PADDED[4][0]
    base = _with_sites(
        make_profile(PADDED),
        {copy: [LaunchSite(path="engine/moe.py", line=80, function="Moe.forward", calls=32.0)]},
    )
    head = _with_sites(
        make_profile(slow(PADDED), syncs=32),
        {
            FILL[0]: [LaunchSite(path=PS, line=22, function="_pad_to_graph_size", calls=32.0)],
            copy: [
                LaunchSite(path=NCCL, line=16, function="PyNcclCommunicator.all_reduce", calls=32.0),
                LaunchSite(path="engine/moe.py", line=80, function="Moe.forward", calls=32.0),
            ],
            "cudaDeviceSynchronize": [
                LaunchSite(path=NCCL, line=19, function="PyNcclCommunicator.all_reduce", calls=32.0)
            ],
        },
    )
    return profile.diff(base, head)


def test_the_launching_lines_are_named_and_those_the_commit_changed_marked(file_regression):
    markdown = kernels_markdown(_sited_slow_commit(), changed_lines(slow_diff(), by="this commit"))
    file_regression.check(markdown, extension=".md", basename="kernels_launching_lines")
    [fill] = [line for line in markdown.splitlines() if "FillFunctor" in line]
    assert f"`{PS}:22` `_pad_to_graph_size` ✏️ changed by this commit" in fill
    [copy] = [line for line in markdown.splitlines() if "direct_copy" in line]
    # The copy's second launcher is a line the commit did not touch: named, never marked.
    assert "`engine/moe.py:80` `Moe.forward`<br>" not in copy and copy.endswith(
        "`engine/moe.py:80` `Moe.forward` |"
    )


def test_without_the_change_lines_are_named_and_none_is_marked():
    d = _sited_slow_commit()
    markdown = kernels_markdown(d)
    assert f"`{PS}:22` `_pad_to_graph_size`" in markdown and "✏️" not in markdown
    text = "\n".join(kernels_text(d, changed_lines(slow_diff(), by="this commit")))
    assert f"launched by {PS}:22 _pad_to_graph_size, 32.00/step (changed by this commit)" in text
    assert "launched by engine/moe.py:80 Moe.forward, 32.00/step\n" in text + "\n"


def test_a_vanished_kernel_names_the_base_s_line_and_only_a_diff_of_that_base_marks_it():
    site = LaunchSite(path=PS, line=21, function="tensor_model_parallel_all_reduce", calls=1.0)
    base = _with_sites(make_profile([*PADDED, ("old_kernel", 1, 5.0)]), {"old_kernel": [site]})
    d = profile.diff(base, make_profile(PADDED))
    [gone] = d.kernels
    assert (gone.change, gone.side, gone.sites) == ("vanished", "base", (site,))
    assert "✏️ changed by this PR" in kernels_markdown(d, changed_lines(slow_diff()))  # old line 21: rewritten
    assert "✏️ changed" not in kernels_markdown(d, changed_lines(slow_diff(), base_numbers=False))


def test_changed_lines_are_the_added_lines_of_the_head_and_the_removed_lines_of_the_base():
    changed = changed_lines(slow_diff())
    assert set(changed.head[PS]) == {9, 10, *range(20, 28), 29, 30, 32, 33, 34, 35}
    assert set(changed.base[PS]) == {20, 21}
    assert 16 in changed.head[NCCL] and 12 not in changed.head[NCCL]  # the def line: context


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from("@ -+,0123456789\nab/diff--gitx"), max_size=300))
def test_any_text_gives_changed_lines_and_never_raises(text):
    changed = changed_lines(text)
    assert all(line >= 0 for lines in changed.head.values() for line in lines)


def test_a_hostile_frame_stays_inside_its_code_spans():
    hostile = LaunchSite(path="a/`b|c`.py", line=1, function="</details>`|x", calls=1.0)
    base = make_profile(PADDED)
    head = _with_sites(make_profile([*PADDED, ("new_kernel", 1, 5.0)]), {"new_kernel": [hostile]})
    [row] = [line for line in kernels_markdown(profile.diff(base, head)).splitlines() if "new_kernel" in line]
    assert row.count(" | ") == 5 and "\\|" in row
    assert re.sub(r"`[^`]*`", "", row).count("</details>") == 0
