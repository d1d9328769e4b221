"""Risk scoring: which rules fire, where, and how they add up."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.config import schema as config
from bot.core.risk import diff as diffs
from bot.core.risk import ruleset
from bot.core.risk import scoring as risk


def file_diff(
    path: str,
    removed: list[str],
    added: list[str],
    header: str = "",
    context: tuple[str, str] = ("    x = 1", "    return x"),
    start: int = 10,
) -> str:
    src = len(removed) + 2
    tgt = len(added) + 2
    lines = [
        f"diff --git a/{path} b/{path}",
        "index 1111111..2222222 100644",
        f"--- a/{path}",
        f"+++ b/{path}",
        f"@@ -{start},{src} +{start},{tgt} @@ {header}",
        " " + context[0],
        *("-" + line for line in removed),
        *("+" + line for line in added),
        " " + context[1],
    ]
    return "\n".join(lines) + "\n"


def score(text: str, yaml_text: str = "", source=None) -> risk.RiskReport:
    parsed = diffs.parse(text)
    rules = ruleset.build(config.load(yaml_text), (f.path for f in parsed.files))
    return risk.score(parsed, rules, source)


def rules_fired(report: risk.RiskReport) -> set[str]:
    return {s.rule for s in report.signals}


def test_a_communicator_change_inside_all_reduce_is_high_risk_and_says_where():
    report = score(
        file_diff(
            "python/sglang/srt/distributed/device_communicators/pynccl.py",
            ["        out = tensor"],
            ["        out = tensor.clone()"],
            header="def all_reduce(self, tensor, op=None):",
        )
    )
    assert report.level == "high"
    assert {"path.pynccl", "function.collective", "token.allocation"} <= rules_fired(report)
    collective = next(s for s in report.signals if s.rule == "function.collective")
    assert (collective.function, collective.line, collective.side) == ("all_reduce", 11, "old")
    sentence = collective.sentence()
    assert "pynccl.py:11" in sentence and "all_reduce()" in sentence and "function.collective" in sentence


def test_docs_tests_ci_and_diffusion_files_score_zero():
    for path in (
        "docs/guide.md",
        "README.md",
        "test/srt/test_pynccl.py",
        "tests/test_x.py",
        ".github/workflows/ci.yml",
        "python/sglang/multimodal_gen/runtime/layers/attention.py",
        "benchmark/bench_one.py",
        "docs_new/docs/advanced_features/attention_backend.mdx",
    ):
        report = score(
            file_diff(path, ["torch.cuda.synchronize()"], ["x.item()"], header="def all_reduce():")
        )
        assert (report.score, report.level, report.signals) == (0, "none", []), path
        assert report.files[0].cold is not None


def test_a_cold_file_does_not_dilute_a_hot_one():
    hot = file_diff("vllm/distributed/parallel_state.py", ["a"], ["b"])
    alone, mixed = score(hot), score(hot + file_diff("docs/x.md", ["a"], ["b"]))
    assert mixed.score == alone.score and mixed.level == alone.level


def test_an_ordinary_source_change_is_low_and_only_for_its_size():
    report = score(file_diff("python/sglang/srt/entrypoints/http_server.py", ["a = 1"], ["a = 2"]))
    assert report.level == "low" and rules_fired(report) == {"size"}


def test_host_syncs_env_vars_and_barriers_on_changed_lines_fire_but_not_in_context():
    report = score(
        file_diff(
            "engine/worker.py",
            [],
            ["    torch.cuda.synchronize()", "    os.environ['NCCL_ALGO'] = 'Tree'", "    dist.barrier()"],
            context=("    y = x.item()", "    return y"),
        )
    )
    assert {"token.host-sync", "token.nccl-env", "token.barrier"} <= rules_fired(report)
    sync = next(s for s in report.signals if s.rule == "token.host-sync")
    assert (sync.match, sync.line, sync.side) == ("torch.cuda.synchronize(", 11, "new")


def test_allocations_count_only_in_hot_files_or_functions():
    cold_function = score(
        file_diff("engine/server.py", [], ["    t = torch.empty(4)"], header="def handle_request(self):")
    )
    hot_function = score(
        file_diff("engine/server.py", [], ["    t = torch.empty(4)"], header="def forward(self, x):")
    )
    assert "token.allocation" not in rules_fired(cold_function)
    assert "token.allocation" in rules_fired(hot_function)


def test_a_def_inside_the_hunk_names_the_function_of_the_lines_after_it():
    text = file_diff(
        "engine/model_executor/runner.py",
        [],
        ["def replay(self):", "    torch.cuda.synchronize()"],
        header="def helper():",
    )
    sync = next(s for s in score(text).signals if s.rule == "token.host-sync")
    assert sync.function == "replay"


def test_the_file_itself_names_the_enclosing_method_when_available():
    source = [
        "class Runner:",
        "    def capture(self):",
        "        a = 1",
        "        b = 2",
        "",
        "        c = 3",
    ]
    text = file_diff(
        "engine/runner.py",
        [],
        ["        c = 3"],
        header="class Runner:",
        context=("        b = 2", ""),
        start=4,
    )
    report = score(text, source=lambda path: source)
    capture = next(s for s in report.signals if s.rule == "function.graph-capture")
    assert capture.function == "capture"


def test_enclosing_function_handles_nesting_blank_lines_and_module_level():
    lines = [
        "import x",
        "",
        "class A:",
        "    def f(self):",
        "        if y:",
        "",
        "            z()",
        "    def g(self):",
        "        pass",
        "w = 1",
    ]
    assert risk.enclosing_function(lines, 7) == "f"
    assert risk.enclosing_function(lines, 9) == "g"
    assert risk.enclosing_function(lines, 1) is None
    assert risk.enclosing_function(lines, 99) is None


def test_dependency_pins_fire_in_manifests_only():
    manifest = score(file_diff("python/pyproject.toml", ['  "torch==2.8.0",'], ['  "torch==2.9.1",']))
    code = score(file_diff("engine/util.py", ["torch==2.8.0"], ["torch==2.9.1"]))
    docker = score(file_diff("docker/Dockerfile", ["ARG CUDA_VERSION=12.8.1"], ["ARG CUDA_VERSION=12.9.1"]))
    added = score(file_diff("python/pyproject.toml", [], ['  "flash-attn==2.7.0",']))
    unread = score(
        file_diff("docker/Dockerfile", ["RUN pip install torch==2.8"], ["RUN pip install torch==2.9"])
    )
    # A pin that moved is one fact: the runtime rule says what moved, the pin token does not repeat it.
    assert "dependency.runtime" in rules_fired(manifest) and "dependency.kernels" not in rules_fired(manifest)
    assert "dependency.kernels" in rules_fired(added)
    assert "dependency.kernels" not in rules_fired(code)
    assert "dependency.runtime" in rules_fired(docker) and "dependency.cuda" not in rules_fired(docker)
    assert "dependency.runtime" in rules_fired(unread) and "dependency.kernels" not in rules_fired(unread)


def test_a_pin_of_a_look_alike_package_does_not_fire():
    report = score(file_diff("requirements.txt", ["torchvision==0.1"], ["torchvision==0.2"]))
    assert "dependency.kernels" not in rules_fired(report)


def test_signals_of_one_category_count_once_categories_combine():
    one = score(file_diff("a/custom_all_reduce.py", ["a"], ["b"]))
    both = score(file_diff("a/custom_all_reduce.py", ["a"], ["b"]) + file_diff("b/pynccl.py", ["a"], ["b"]))
    three = score(
        file_diff("a/custom_all_reduce.py", ["a"], ["b"]) + file_diff("b/cuda_graph_runner.py", ["a"], ["b"])
    )
    assert both.score - one.score < 15  # same category: corroboration, at half weight
    assert three.score - one.score > (both.score - one.score) + 5  # another category: more


def test_repeated_hits_of_a_rule_are_counted_not_repeated():
    report = score(file_diff("engine/w.py", [], ["    a.item()", "    b.item()", "    c.item()"]))
    syncs = [s for s in report.signals if s.rule == "token.host-sync"]
    assert len(syncs) == 1 and syncs[0].count == 3 and "(3 times)" in syncs[0].sentence()


def test_size_is_a_mild_factor():
    big = score(file_diff("engine/server.py", [], [f"    line_{i} = {i}" for i in range(5000)]))
    assert big.level == "low" and big.score <= 10


def test_editing_the_repository_config_is_noted():
    report = score(file_diff(".github/perfbot.yml", ["a: 1"], ["a: 2"]))
    assert report.score == 0 and "take effect after merge" in report.notes[0]


def test_repository_rules_weights_and_disables_apply():
    yaml_text = """
risk:
  rules:
    - {id: my.hot, kind: path, category: custom, weight: 70, description: our hot loop, paths: ["core/loop.cc"]}
  weights: {path.pynccl: 5}
  disable: [cold.tests]
"""
    report = score(file_diff("core/loop.cc", ["a"], ["b"]), yaml_text)
    assert "my.hot" in rules_fired(report) and report.level == "high"
    assert score(file_diff("x/pynccl.py", ["a"], ["b"]), yaml_text).signals[0].weight == 5
    assert score(file_diff("tests/test_a.py", ["a"], ["b"]), yaml_text).score > 0


def test_thresholds_decide_the_level():
    text = file_diff("engine/server.py", ["a"], ["b"])
    assert score(text, "risk: {thresholds: {low: 50, medium: 60, high: 70}}").level == "none"


def test_damaged_input_still_scores_with_a_warning():
    text = file_diff("x/pynccl.py", ["a"], ["b", "c"]).rsplit("\n", 3)[0] + "\n"
    report = score(text)
    assert report.level in ("medium", "high") and report.warnings


def test_the_json_shape_follows_the_contract():
    data = score(file_diff("x/pynccl.py", ["a"], ["b"])).to_dict()
    assert set(data) >= {"score", "level", "files", "reasons"}
    assert 0 <= data["score"] <= 100 and data["level"] in config.LEVELS
    assert set(data["files"][0]) >= {"path", "score", "reasons"}
    assert all(isinstance(r, str) for r in data["reasons"])


@given(
    st.lists(
        st.sampled_from(
            ["engine/pynccl.py", "docs/a.md", "x/attention/b.py", "y.py", "requirements.txt", "tests/t.py"]
        ),
        min_size=1,
        max_size=6,
    ),
    st.lists(
        st.sampled_from(["x.item()", "a = 1", "torch==2.1", "NCCL_X=1", "dist.barrier()"]),
        min_size=1,
        max_size=5,
    ),
)
@settings(max_examples=100)
def test_scores_stay_in_range_and_levels_agree_with_thresholds(paths, lines):
    text = "".join(file_diff(p, lines, lines[::-1]) for p in paths)
    report = score(text)
    assert 0 <= report.score <= 100
    assert report.level == config.Thresholds().level(report.score)
    assert all(0 <= f.score <= 100 for f in report.files)


def test_one_place_counts_once_across_overlapping_rules():
    report = score(
        file_diff("python/sglang/srt/distributed/device_communicators/custom_all_reduce.py", ["a"], ["b"])
    )
    communicator = [s for s in report.signals if s.category == "communicator"]
    assert [s.rule for s in communicator] == ["path.custom-allreduce"]
    assert communicator[0].also == ("path.communicators", "sglang.distributed")
    assert "[path.custom-allreduce, +40; also path.communicators, sglang.distributed]" in (
        communicator[0].sentence()
    )


def test_a_change_only_in_set_up_code_counts_at_half_weight():
    path = "python/sglang/srt/model_executor/cuda_graph_runner.py"
    setup = score(
        file_diff(
            path, ["        self.bs = 1"], ["        self.bs = 2"], header="def __init__(self, model_runner):"
        )
    )
    step = score(
        file_diff(path, ["        out = x"], ["        out = y"], header="def replay(self, forward_batch):")
    )
    graph = next(s for s in setup.signals if s.rule == "path.cuda-graph")
    assert (graph.weight, graph.full_weight) == (17.5, 35)
    assert graph.note == "only set-up code changed: __init__()"
    assert "[path.cuda-graph, +17.5 of 35: only set-up code changed: __init__()" in graph.sentence()
    assert next(s for s in step.signals if s.rule == "path.cuda-graph").weight == 35
    assert setup.score < step.score


def test_a_token_in_set_up_code_counts_at_half_weight():
    report = score(
        file_diff(
            "engine/pynccl.py", [], ["        torch.cuda.synchronize()"], header="def __init__(self, group):"
        )
    )
    sync = next(s for s in report.signals if s.rule == "token.host-sync")
    assert (sync.weight, sync.full_weight, sync.note) == (7.5, 15, "in set-up code (__init__())")


def test_a_function_a_rule_calls_hot_is_never_set_up():
    report = score(
        file_diff(
            "engine/pynccl.py",
            ["        a = 1"],
            ["        a = 2"],
            header="def init_forward_metadata(self, batch):",
        )
    )
    assert next(s for s in report.signals if s.rule == "path.pynccl").weight == 40


def test_comment_log_and_formatting_only_changes_score_zero_and_renames_keep_a_quarter():
    path = "vllm/distributed/device_communicators/pynccl.py"
    comment = score(
        file_diff(
            path, ["        x = 1  # old"], ["        x = 1  # new"], header="def all_reduce(self, tensor):"
        )
    )
    formatted = score(
        file_diff(
            path,
            ["        (a, b) = f(x)"],
            ["        a, b = f(", "            x,", "        )"],
            header="def all_reduce(self, tensor):",
        )
    )
    rename = score(
        file_diff(
            path,
            ["        foo = bar(x)", "        return foo"],
            ["        baz = bar(x)", "        return baz"],
            header="def all_reduce(self, tensor):",
        )
    )
    for cosmetic in (comment, formatted):
        assert (cosmetic.score, cosmetic.level, cosmetic.signals) == (0, "none", [])
        assert cosmetic.files[0].code_lines == 0
    nccl = next(s for s in rename.signals if s.rule == "path.pynccl")
    assert (nccl.weight, nccl.note) == (10, "rename only (foo -> baz)")
    assert rename.level in ("low", "none")
    collective = next(s for s in rename.signals if s.rule == "function.collective")
    assert collective.weight == 6.2 and collective.full_weight == 25


def test_a_runtime_upgrade_is_high_risk_with_the_versions_in_the_reason():
    report = score(file_diff("python/pyproject.toml", ['  "torch==2.8.0",'], ['  "torch==2.9.1",']))
    upgrade = next(s for s in report.signals if s.rule == "dependency.runtime")
    assert report.level == "high"
    assert upgrade.match == "torch 2.8.0 -> 2.9.1" and upgrade.also == ()  # the pin's rewrite is that move
    assert upgrade.sentence().startswith(
        "version change of the runtime stack (torch, triton, "
        "CUDA, NCCL, kernel libraries): torch 2.8.0 -> 2.9.1 "
        "[dependency.runtime, +60]"
    )
    cuda = score(file_diff("docker/Dockerfile", ["ARG CUDA_VERSION=12.8.1"], ["ARG CUDA_VERSION=12.9.1"]))
    assert cuda.level == "high" and "cuda 12.8.1 -> 12.9.1" in cuda.reasons[0]
    other = score(file_diff("requirements.txt", ["requests==2.1"], ["requests==2.2"]))
    assert "dependency.runtime" not in rules_fired(other)


def test_repository_dependency_and_setup_rules_apply():
    yaml_text = """
risk:
  rules:
    - {id: ours.runtime, kind: dependency, category: dependency, weight: 70,
       description: our kernels, pattern: 'our-kernels', paths: ["requirements.txt"]}
    - {id: ours.setup, kind: setup, category: setup, weight: 20, description: boot,
       pattern: '^boot$'}
"""
    upgrade = score(file_diff("requirements.txt", ["our_kernels==1.0"], ["our-kernels==1.1"]), yaml_text)
    assert "ours.runtime" in rules_fired(upgrade) and upgrade.signals[0].match == "our-kernels 1.0 -> 1.1"
    boot = score(file_diff("engine/pynccl.py", ["    a = 1"], ["    a = 2"], header="def boot():"), yaml_text)
    assert next(s for s in boot.signals if s.rule == "path.pynccl").weight == 8


def test_the_json_adds_the_other_rules_and_the_lowered_weight():
    data = score(
        file_diff("engine/pynccl.py", ["    a = 1"], ["    a = 2"], header="def __init__(self):")
    ).to_dict()
    signal = next(s for s in data["signals"] if s["rule"] == "path.pynccl")
    assert (signal["weight"], signal["full_weight"], signal["also"]) == (20, 40, [])
    assert signal["note"] == "only set-up code changed: __init__()"


def test_an_environment_variable_renamed_in_a_communicator_ranks_below_a_runtime_upgrade():
    path = "python/sglang/srt/distributed/device_communicators/custom_all_reduce.py"
    removed = [
        '    if os.environ.get("SGLANG_CUSTOM_AR_OLD"):',
        '        use = os.environ.get("SGLANG_CUSTOM_AR_OLD")',
    ]
    rename = score(file_diff(path, removed, [line.replace("OLD", "NEW") for line in removed]))
    upgrade = score(file_diff("python/pyproject.toml", ['  "torch==2.8.0",'], ['  "torch==2.9.1",']))
    assert "rename only (SGLANG_CUSTOM_AR_OLD -> SGLANG_CUSTOM_AR_NEW)" in rename.reasons[0]
    assert rename.level == "low" and upgrade.level == "high"


def test_reasons_name_the_first_changed_line_of_code_never_a_blank_or_a_comment():
    path = "python/sglang/srt/distributed/parallel_state.py"
    cosmetic_first = (
        "diff --git a/p b/p\n".replace("p", path) + f"--- a/{path}\n+++ b/{path}\n"
        '@@ -21,3 +21,4 @@\n """\n+\n import gc\n import os\n'
        "@@ -80,4 +81,6 @@ def graph_capture():\n     x = 1\n+    # sync the streams first\n+\n"
        "-    y = 2\n+    y = torch.cuda.synchronize() or 3\n     return x\n"
    )
    report = score(cosmetic_first)
    state = next(s for s in report.signals if s.rule == "path.parallel-state")
    assert (state.line, state.side, state.function) == (81, "old", "graph_capture")  # y = 2, removed
    assert {(s.line, s.side) for s in report.signals if s.line} == {(81, "old"), (84, "new")}
    assert report.files[0].code_lines == 2  # the removed and the added line of code


def test_a_sync_in_a_comment_is_no_reason():
    path = "python/sglang/srt/distributed/device_communicators/pynccl.py"
    commented = score(
        file_diff(
            path,
            [],
            ["        y = x  # torch.cuda.synchronize() was here"],
            header="def all_reduce(self, x):",
        )
    )
    assert "token.host-sync" not in rules_fired(commented)
    code = score(
        file_diff(path, [], ['        y = "#"; torch.cuda.synchronize()'], header="def all_reduce(self, x):")
    )
    assert "token.host-sync" in rules_fired(code)


def test_a_commit_of_only_cosmetic_hunks_is_none_even_in_the_hottest_files():
    hot = [
        "python/sglang/srt/distributed/device_communicators/pynccl.py",
        "python/sglang/srt/model_executor/cuda_graph_runner.py",
    ]
    text = "".join(
        file_diff(
            path,
            ["        (a, b) = f(x)  # split"],
            ["        a, b = f(", "            x,", "        )"],
            header="def all_reduce(self, x):",
        )
        for path in hot
    )
    report = score(text)
    assert (report.score, report.level, report.signals) == (0, "none", [])


def test_a_sync_moved_within_its_function_is_neither_risk_nor_improvement_and_a_net_addition_is_risk():
    path = "python/sglang/srt/distributed/device_communicators/pynccl.py"
    moved = score(
        file_diff(
            path,
            ["        torch.cuda.synchronize()"],
            ["        torch.cuda.synchronize()  # before"],
            header="def all_reduce(self, x):",
            context=("        x = 1", "        y = 2"),
        )
    )
    assert moved.improvements == [] and "token.host-sync" not in rules_fired(moved)
    more = score(
        file_diff(
            path,
            ["        a = x.item()"],
            ["        a = x.item()", "        b = y.item()"],
            header="def all_reduce(self, x):",
        )
    )
    sync = next(s for s in more.signals if s.rule == "token.host-sync")
    assert (sync.count, sync.side, more.improvements) == (1, "new", [])


def test_changed_imports_alone_are_set_up_code_and_the_reason_names_a_step_change_first():
    path = "python/sglang/srt/distributed/device_communicators/pynccl.py"
    imports = score(
        file_diff(
            path,
            ["from engine.utils import slow_copy"],
            ["from engine.utils import (", "    fast_copy,", ")"],
            context=("import os", ""),
        )
    )
    nccl = next(s for s in imports.signals if s.rule == "path.pynccl")
    assert (nccl.weight, nccl.note) == (20, "only set-up code changed: imports")
    text = (
        file_diff(path, ["import os"], ["import os, sys"], context=("import re", ""))
        + file_diff(
            path, ["        y = 1"], ["        y = 2"], header="def all_reduce(self, x):", start=40
        ).split("\n", 4)[4]
    )
    both = score(text)
    nccl = next(s for s in both.signals if s.rule == "path.pynccl")
    assert (nccl.weight, nccl.function, nccl.line) == (40, "all_reduce", 41)


def test_a_char_turned_string_in_a_cuda_kernel_is_code_not_formatting():
    path = "csrc/attention/attention_kernels.cu"
    context = ("{", "}")
    char = score(file_diff(path, ["  if (c == 'a') {"], ['  if (c == "a") {'], context=context))
    comment = score(
        file_diff(path, ["  if (c == 'a') {  // old"], ["  if (c == 'a') {  // new"], context=context)
    )
    assert char.score > 0 and char.files[0].code_lines > 0
    assert (comment.score, comment.level, comment.signals) == (0, "none", [])
