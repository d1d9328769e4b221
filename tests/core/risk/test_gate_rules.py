"""The sharper static rules: whole-word function names, import-time code, real pins only, kernel
and backend defaults, and a deterministic order of commits that score the same."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.risk import changes, manifests, profiles, ruleset, triage
from bot.core.risk import diff as diffs
from tests.core.risk.test_manifests import moves
from tests.core.risk.test_scoring import file_diff, rules_fired, score

FUNCTION_RULES = {r.id: re.compile(r.required_pattern) for r in profiles.GENERIC if r.kind == "function"}
RULES = ruleset.build(None, profile="sglang")


def fired(name: str) -> set[str]:
    return {rule_id for rule_id, rx in FUNCTION_RULES.items() if rx.search(name)}


# --- name rules match whole words ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rules"),
    [
        ("forward", {"function.forward"}),
        ("_forward_impl", {"function.forward"}),
        ("init_forward_metadata", {"function.forward"}),
        ("batch_decode", {"function.forward"}),
        ("forwardBatch", {"function.forward"}),
        ("_schedule_prefills", {"function.forward"}),
        ("decode2", {"function.forward"}),
        ("outplace_all_reduce", {"function.collective"}),
        ("all_gatherv", {"function.collective"}),
        ("send_to_scheduler", {"function.collective"}),
        ("_sample_tokens", {"function.sampling"}),
        ("capture", {"function.graph-capture"}),
        ("get_decoder", set()),
        ("set_decoder", set()),
        ("is_encoder_decoder_model", set()),
        ("sender", set()),
        ("sampler", set()),
        ("captured_tokens", set()),
        ("forwarded", set()),
        ("prefiller_init", set()),
        ("verifying", set()),
        ("new_grouping", set()),
    ],
)
def test_function_rules_match_whole_words_of_a_name(name, rules):
    assert fired(name) == rules


WORDS = ["forward", "decode", "prefill", "sample", "capture", "verify", "send", "recv"]
letters = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)


@given(
    word=st.sampled_from(WORDS),
    tail=letters.filter(lambda t: t != "s"),
    head=st.sampled_from(["", "_", "get_", "self_"]),
)
@settings(max_examples=200, deadline=None)
def test_a_word_run_on_into_more_letters_is_not_that_word(word, tail, head):
    rx = {
        "forward": "function.forward",
        "decode": "function.forward",
        "prefill": "function.forward",
        "sample": "function.sampling",
        "capture": "function.graph-capture",
        "verify": "function.speculative",
        "send": "function.collective",
        "recv": "function.collective",
    }[word]
    assert rx not in fired(f"{head}{word}{tail}")  # `decoder`, `sampler`, `sending`...
    assert rx not in fired(f"{head}{word}s{tail}")


@given(word=st.sampled_from(["forward", "decode", "prefill"]), head=letters, tail=letters)
@settings(max_examples=100, deadline=None)
def test_a_step_word_is_found_between_underscores_anywhere(word, head, tail):
    assert "function.forward" in fired(f"{head}_{word}_{tail}")
    assert "function.forward" not in fired(f"{head}{word}{tail}x")


def test_a_decoder_getter_in_a_model_runner_is_no_forward_pass():
    path = "python/sglang/srt/model_executor/model_runner.py"
    getter = score(
        file_diff(path, ["        return self.a"], ["        return self.b"], header="def get_decoder(self):")
    )
    step = score(
        file_diff(
            path,
            ["        return self.a"],
            ["        return self.b"],
            header="def forward_decode(self, batch):",
        )
    )
    assert "function.forward" not in rules_fired(getter)
    assert "function.forward" in rules_fired(step)


# --- import-time code ---------------------------------------------------------------------


def module_hunk(removed: list[str], added: list[str], before: tuple[str, ...] = ("import os",)):
    lines = [
        "diff --git a/e/pynccl.py b/e/pynccl.py",
        "--- a/e/pynccl.py",
        "+++ b/e/pynccl.py",
        f"@@ -1,{len(before) + len(removed)} +1,{len(before) + len(added)} @@",
        *(" " + line for line in before),
        *("-" + line for line in removed),
        *("+" + line for line in added),
    ]
    hunk = diffs.parse("\n".join(lines) + "\n").files[0].hunks[0]
    return changes.import_time_only(hunk, 0, len(hunk.texts), ("#",))


@pytest.mark.parametrize(
    ("removed", "added"),
    [
        (["from engine.utils import a"], ["from engine.utils import a, b"]),
        ([], ["import json"]),
        ([], ["logger = logging.getLogger(__name__)"]),
        (['__all__ = ["a"]'], ['__all__ = ["a", "b"]']),
        ([], ['T = TypeVar("T")']),
        (
            ["from engine.utils import (", "    a,", ")"],
            ["from engine.utils import (", "    a,", "    b,", ")"],
        ),
    ],
)
def test_import_time_code_that_selects_nothing_is_set_up(removed, added):
    assert module_hunk(removed, added)


@pytest.mark.parametrize(
    ("removed", "added", "before"),
    [
        (["    from vllm import fused_moe"], ["    from sgl_kernel import fused_moe"], ("if _is_cuda:",)),
        (["from engine.layers.triton_ops import rmsnorm"], ["from engine.layers.native import rmsnorm"], ()),
        ([], ["    fused_add_rmsnorm,"], ("from sgl_kernel import (",)),
        ([], ["from engine.attention.flashinfer_backend import FlashInferBackend"], ()),
        (["CHUNK = 64"], ["CHUNK = 128"], ()),
        ([], ['_use_aiter = get_bool_env_var("SGLANG_USE_AITER")'], ()),
        (["try:"], ["if _is_hip:"], ()),
        ([], ["#include <cutlass/gemm.h>"], ()),
    ],
)
def test_import_time_code_that_selects_a_kernel_backend_or_config_keeps_its_weight(removed, added, before):
    assert not module_hunk(removed, added, before)


def test_a_comment_alone_at_module_level_is_no_set_up_change():
    assert not module_hunk(["# a"], ["# b"])


def test_a_kernel_import_in_a_hot_file_keeps_the_file_rules_whole_weight():
    path = "python/sglang/srt/distributed/device_communicators/pynccl.py"
    plain = score(
        file_diff(
            path, ["from engine.utils import a"], ["from engine.utils import b"], context=("import os", "")
        )
    )
    kernel = score(
        file_diff(
            path,
            ["from engine.ops import slow_copy"],
            ["from sgl_kernel import fast_copy"],
            context=("import os", ""),
        )
    )
    weight = {r.rule: r.weight for r in plain.signals}["path.pynccl"]
    assert (weight, {r.rule: r.weight for r in kernel.signals}["path.pynccl"]) == (20, 40)


# --- versions only from real pins and base images ------------------------------------------


@pytest.mark.parametrize(
    ("path", "removed", "added"),
    [
        ("requirements.txt", ["# torch==2.8.0 breaks fp8"], ["# torch==2.9.0 breaks fp8"]),
        (
            "docker/Dockerfile",
            ['RUN if [ "$CUDA_VERSION" = "12.8.1" ]; then echo a; fi'],
            ['RUN if [ "$CUDA_VERSION" = "12.9.1" ]; then echo a; fi'],
        ),
        ("docker/Dockerfile", ["RUN echo ${TORCH_VERSION} 2.8"], ["RUN echo ${TORCH_VERSION} 2.9"]),
        ("docker/Dockerfile", ["# FROM nvidia/cuda:12.8.1-devel"], ["# FROM nvidia/cuda:12.9.1-devel"]),
        (
            "pyproject.toml",
            ['"torch==2.8.0",  # TODO: torch==2.9.0'],
            ['"torch==2.8.0",  # TODO: torch==3.0.0'],
        ),
    ],
)
def test_comments_and_references_to_a_setting_pin_nothing(path, removed, added):
    assert moves(path, removed, added) == []


def test_a_pin_with_a_comment_after_it_and_a_url_fragment_are_still_read():
    assert moves("requirements.txt", ["torch==2.8.0  # cu128"], ["torch==2.9.0  # cu128"]) == [
        "torch 2.8.0 -> 2.9.0"
    ]
    assert moves("requirements.txt", ["x @ git+https://h/x@v1#egg=x"], ["x @ git+https://h/x@v2#egg=x"]) == [
        "x x@v1 -> x@v2"
    ]


@given(
    comment=st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=60),
    lead=st.sampled_from(["", "torch==2.8.0 ", "ARG CUDA_VERSION=12.8 "]),
)
@settings(max_examples=200, deadline=None)
def test_whatever_follows_a_comment_mark_moves_no_version(comment, lead):
    old, new = f"{lead}# {comment} torch==1.0", f"{lead}# {comment} torch==2.0 CUDA_VERSION=13"
    assert moves("docker/Dockerfile", [old], [new]) == []
    assert manifests.normalise("Flash_Attn") == "flash-attn"


# --- a changed kernel or backend default ----------------------------------------------------


@pytest.mark.parametrize(
    ("path", "removed", "added", "function"),
    [
        (
            "python/sglang/srt/server_args.py",
            ["    attention_backend: Optional[str] = None"],
            ['    attention_backend: Optional[str] = "fa3"'],
            "",
        ),
        (
            "python/sglang/srt/server_args.py",
            ['    moe_runner_backend: str = "auto"'],
            ['    moe_runner_backend: str = "triton"'],
            "",
        ),
        (
            "python/sglang/srt/server_args.py",
            ["    enable_torch_compile: bool = False"],
            ["    enable_torch_compile: bool = True"],
            "",
        ),
        (
            "python/sglang/srt/environ.py",
            ["    SGLANG_USE_AITER = EnvBool(False)"],
            ["    SGLANG_USE_AITER = EnvBool(True)"],
            "",
        ),
        (
            "vllm/envs.py",
            ['    "VLLM_USE_TRITON_FLASH_ATTN": lambda: False,'],
            ['    "VLLM_USE_TRITON_FLASH_ATTN": lambda: True,'],
            "",
        ),
        (
            "vllm/config/model.py",
            ['    kv_cache_dtype: str = "auto"'],
            ['    kv_cache_dtype: str = "fp8"'],
            "",
        ),
        (
            "python/sglang/srt/server_args.py",
            ['            self.attention_backend = "flashinfer"'],
            ['            self.attention_backend = "fa3"'],
            "def __post_init__(self):",
        ),
    ],
)
def test_a_changed_default_that_selects_a_kernel_or_backend_is_a_reason(path, removed, added, function):
    report = score(file_diff(path, removed, added, header=function))
    signal = next(s for s in report.signals if s.rule == "config.kernel-default")
    assert (signal.weight, signal.full_weight, signal.count) == (30, None, 2)  # set-up or not


@pytest.mark.parametrize(
    ("path", "removed", "added"),
    [
        ("python/sglang/srt/server_args.py", ["    tp_size: int = 1"], ["    tp_size: int = 2"]),
        (
            "python/sglang/srt/server_args.py",
            ['        if self.attention_backend == "fa3":'],
            ['        if self.attention_backend != "fa3":'],
        ),
        (
            "python/sglang/srt/managers/scheduler.py",
            ['    attention_backend: str = "a"'],
            ['    attention_backend: str = "b"'],
        ),  # not where settings live
    ],
)
def test_other_settings_and_comparisons_are_no_default_switch(path, removed, added):
    assert "config.kernel-default" not in rules_fired(score(file_diff(path, removed, added)))


# --- ties ranked deterministically ------------------------------------------------------------


def commit(sha: str, path: str, removed: list[str], added: list[str], header: str = "") -> triage.Commit:
    return triage.Commit(
        sha,
        ("0" * 40,),
        "a",
        "2026-01-01",
        f"change {sha[:4]}",
        file_diff(path, removed, added, header=header),
    )


COMMITS = [
    commit("a" * 40, "engine/utils.py", ["    y = 1"], ["    y = 2"]),
    commit("b" * 40, "engine/utils.py", ["    y = 1"], ["    y = 2"]),
    commit("c" * 40, "engine/utils.py", ["    y = 1"], ["    y = 2", "    z = 3"]),
    commit("d" * 40, "docs/a.md", ["a"], ["b"]),
    commit("e" * 40, "docs/b.md", ["a"], ["b"]),
    commit(
        "f" * 40,
        "engine/distributed/pynccl.py",
        ["        y = 1"],
        ["        y = 2"],
        header="def all_reduce(self):",
    ),
]


@given(st.permutations(COMMITS))
@settings(max_examples=50, deadline=None)
def test_the_ranking_does_not_depend_on_the_order_commits_arrive_in(commits):
    ranked = [item.commit.sha[0] for item in triage.rank(commits, RULES, "a..b").commits]
    assert ranked == [item.commit.sha[0] for item in triage.rank(COMMITS, RULES, "a..b").commits]


def test_ties_go_to_the_stronger_evidence_then_more_code_then_the_sha():
    shuffled = COMMITS[:]
    random.Random(3).shuffle(shuffled)
    ranked = triage.rank(shuffled, RULES, "a..b").commits
    scores = [item.report.score for item in ranked]
    assert scores == sorted(scores, reverse=True)
    assert [item.commit.sha[0] for item in ranked] == ["f", "c", "a", "b", "d", "e"]
    assert scores[1] >= scores[2] == scores[3] and scores[4] == scores[5] == 0


# --- pure moves and mechanical sweeps weigh like renames ----------------------------------------

BLOCK = ["        a = self.buffer[:n]", "        b = torch.empty(n, device=d)", "        a.copy_(b)"]


def move_diff(block: list[str], target: str = "engine/distributed/pynccl.py") -> str:
    removed = file_diff("engine/distributed/old_helpers.py", block, [], header="def helper(self):")
    added = file_diff(target, [], block, header="def all_reduce(self, x):", start=40)
    return removed + added


def test_code_moved_between_files_keeps_a_quarter_and_says_so():
    moved = score(move_diff(BLOCK))
    nccl = next(s for s in moved.signals if s.rule == "path.pynccl")
    assert (nccl.weight, nccl.full_weight) == (10, 40)
    assert nccl.note == "moved code only (the same lines removed or added elsewhere in this change)"
    written = score(file_diff("engine/distributed/pynccl.py", [], BLOCK, header="def all_reduce(self, x):"))
    assert next(s for s in written.signals if s.rule == "path.pynccl").weight == 40
    assert moved.score < written.score


def test_a_move_needs_every_line_found_elsewhere_and_three_lines_of_code():
    changed = move_diff(BLOCK).replace("+        a.copy_(b)", "+        a.copy_(b.item())")
    assert "moved code only" not in " ".join(score(changed).reasons)
    short = score(move_diff(BLOCK[:2]))
    assert next(s for s in short.signals if s.rule == "path.pynccl").weight == 40


def file_changes(text: str):
    return diffs.parse(text).files


@given(
    lines=st.lists(
        st.from_regex(r"[a-z]{1,8} = [a-z]{1,8}\([a-z0-9, ]{0,12}\)", fullmatch=True),
        min_size=3,
        max_size=8,
        unique=True,
    ),
    indent=st.sampled_from(["", "    ", "        "]),
)
@settings(max_examples=60, deadline=None)
def test_any_block_removed_in_one_file_and_added_in_another_is_a_move(lines, indent):
    text = file_diff("e/a.py", [indent + line for line in lines], []) + file_diff(
        "e/b.py", [], ["    " + line for line in reversed(lines)]
    )
    found = changes.mechanical(file_changes(text))
    assert {f: {h: r.kind for h, r in hunks.items()} for f, hunks in found.items()} == {
        0: {0: "move"},
        1: {0: "move"},
    }


def sweep(
    files: int,
    edit: tuple[list[str], list[str]] = (
        ["    from e.args import g_args"],
        ["    from e.server import get_args"],
    ),
):
    return "".join(
        file_diff(f"engine/layers/attention/m{i}.py", *edit, header="def forward(self):")
        for i in range(files)
    )


def test_the_same_edit_in_three_files_is_a_sweep_that_keeps_a_quarter():
    report = score(sweep(3))
    attention = next(s for s in report.signals if s.rule == "path.attention")
    assert (attention.weight, attention.note) == (7.5, "a mechanical edit (the same edit in 3 files)")
    two = score(sweep(2))
    assert next(s for s in two.signals if s.rule == "path.attention").weight == 30


def test_a_sweep_is_the_same_edit_line_for_line():
    text = sweep(2) + file_diff(
        "engine/layers/attention/m9.py",
        ["    from e.args import g_args"],
        ["    from e.server import get_args, other"],
        header="def forward(self):",
    )
    assert changes.mechanical(file_changes(text)) == {}
    docs = sweep(3).replace(".py", ".md")  # no language known: not judged
    assert changes.mechanical(file_changes(docs)) == {}


def test_the_same_lines_only_added_or_only_removed_in_many_files_are_no_sweep():
    """A host sync written into every attention backend is new behaviour in each, not a mechanical
    edit: it keeps its full weight (an end-to-end test's 250-file diff scored low before)."""
    sync = ["    torch.cuda.synchronize()"]
    for edit in (([], sync), (sync, [])):
        assert changes.mechanical(file_changes(sweep(4, edit))) == {}
    report = score(sweep(4, ([], sync)))
    assert next(s for s in report.signals if s.rule == "path.attention").weight == 30


def test_a_cosmetic_or_renamed_hunk_keeps_its_own_reason_over_a_sweep():
    edit = (["    x = a  # old"], ["    x = a  # new"])
    found = changes.mechanical(file_changes(sweep(3, edit)))
    assert {h.kind for hunks in found.values() for h in hunks.values()} == {"sweep"}
    report = score(sweep(3, edit))
    assert report.signals == [] or all(
        s.note != "a mechanical edit (the same edit in 3 files)" for s in report.signals
    )
    assert (
        changes.describe_all([changes.Harmless("move"), changes.Harmless("rename", (("a", "b"),))])
        == "rename only (a -> b)"
    )
    assert (
        changes.describe_all([changes.Harmless("sweep", files=4)])
        == "a mechanical edit (the same edit in 4 files)"
    )


def test_import_time_code_is_judged_from_the_segments_start_and_a_tab_indents_too():
    lines = [
        "diff --git a/e/x.py b/e/x.py",
        "--- a/e/x.py",
        "+++ b/e/x.py",
        "@@ -1,2 +1,2 @@",
        "-CHUNK = 1",
        "+import json",
        " import os",
    ]
    hunk = diffs.parse("\n".join(lines) + "\n").files[0].hunks[0]
    assert changes.import_time_only(hunk, 1, 3, ("#",))  # the constant lies before the segment
    assert not changes.import_time_only(hunk, 0, 3, ("#",))
    assert not module_hunk([], ["\tfrom engine.utils import a"], ("if _is_cuda:",))


def test_a_line_counts_as_moved_only_when_another_hunk_has_it():
    one_way = file_diff(
        "e/x.py", ["    a = f(1)", "    b = g(2)", "    c = h(3)"], ["    a = f(1)"]
    ) + file_diff("e/y.py", [], ["    b = g(2)", "    c = h(3)", "    a = f(1)"])
    other_way = file_diff(
        "e/x.py", ["    a = f(1)"], ["    a = f(1)", "    b = g(2)", "    c = h(3)"]
    ) + file_diff("e/y.py", ["    b = g(2)", "    c = h(3)", "    a = f(1)"], [])
    for text in (one_way, other_way):
        found = changes.mechanical(file_changes(text))
        assert {f: {h: r.kind for h, r in hunks.items()} for f, hunks in found.items()} == {1: {0: "move"}}
    reordered = file_diff(
        "e/x.py",
        ["    a = f(1)", "    b = g(2)", "    c = h(3)"],
        ["    c = h(3)", "    b = g(2)", "    a = f(1)"],
    )
    assert changes.mechanical(file_changes(reordered)) == {}  # nothing elsewhere: a reorder, no move
