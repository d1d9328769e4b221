"""Risk scoring: which rules fire, where, and how they add up."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.config import schema as config
from bot.core.risk import diff as diffs
from bot.core.risk import ruleset
from bot.core.risk import scoring as risk


def file_diff(path: str, removed: list[str], added: list[str], header: str = "",
              context: tuple[str, str] = ("    x = 1", "    return x"), start: int = 10) -> str:
    src = len(removed) + 2
    tgt = len(added) + 2
    lines = [f"diff --git a/{path} b/{path}", "index 1111111..2222222 100644", f"--- a/{path}",
             f"+++ b/{path}", f"@@ -{start},{src} +{start},{tgt} @@ {header}", " " + context[0],
             *("-" + line for line in removed), *("+" + line for line in added), " " + context[1]]
    return "\n".join(lines) + "\n"


def score(text: str, yaml_text: str = "", source=None) -> risk.RiskReport:
    parsed = diffs.parse(text)
    rules = ruleset.build(config.load(yaml_text), (f.path for f in parsed.files))
    return risk.score(parsed, rules, source)


def rules_fired(report: risk.RiskReport) -> set[str]:
    return {s.rule for s in report.signals}


def test_a_communicator_change_inside_all_reduce_is_high_risk_and_says_where():
    report = score(file_diff("python/sglang/srt/distributed/device_communicators/pynccl.py",
                             ["        out = tensor"], ["        out = tensor.clone()"],
                             header="def all_reduce(self, tensor, op=None):"))
    assert report.level == "high"
    assert {"path.pynccl", "function.collective", "token.allocation"} <= rules_fired(report)
    collective = next(s for s in report.signals if s.rule == "function.collective")
    assert (collective.function, collective.line, collective.side) == ("all_reduce", 11, "old")
    sentence = collective.sentence()
    assert "pynccl.py:11" in sentence and "all_reduce()" in sentence and "function.collective" in sentence


def test_docs_tests_ci_and_diffusion_files_score_zero():
    for path in ("docs/guide.md", "README.md", "test/srt/test_pynccl.py", "tests/test_x.py",
                 ".github/workflows/ci.yml", "python/sglang/multimodal_gen/runtime/layers/attention.py",
                 "benchmark/bench_one.py", "docs_new/docs/advanced_features/attention_backend.mdx"):
        report = score(file_diff(path, ["torch.cuda.synchronize()"], ["x.item()"],
                                 header="def all_reduce():"))
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
    report = score(file_diff("engine/worker.py", [], ["    torch.cuda.synchronize()",
                                                      "    os.environ['NCCL_ALGO'] = 'Tree'",
                                                      "    dist.barrier()"],
                             context=("    y = x.item()", "    return y")))
    assert {"token.host-sync", "token.nccl-env", "token.barrier"} <= rules_fired(report)
    sync = next(s for s in report.signals if s.rule == "token.host-sync")
    assert (sync.match, sync.line, sync.side) == ("torch.cuda.synchronize(", 11, "new")


def test_allocations_count_only_in_hot_files_or_functions():
    cold_function = score(file_diff("engine/server.py", [], ["    t = torch.empty(4)"],
                                    header="def handle_request(self):"))
    hot_function = score(file_diff("engine/server.py", [], ["    t = torch.empty(4)"],
                                   header="def forward(self, x):"))
    assert "token.allocation" not in rules_fired(cold_function)
    assert "token.allocation" in rules_fired(hot_function)


def test_a_def_inside_the_hunk_names_the_function_of_the_lines_after_it():
    text = file_diff("engine/model_executor/runner.py", [],
                     ["def replay(self):", "    torch.cuda.synchronize()"], header="def helper():")
    sync = next(s for s in score(text).signals if s.rule == "token.host-sync")
    assert sync.function == "replay"


def test_the_file_itself_names_the_enclosing_method_when_available():
    source = ["class Runner:", "    def capture(self):", "        a = 1", "        b = 2", "",
              "        c = 3"]
    text = file_diff("engine/runner.py", [], ["        c = 3"], header="class Runner:",
                     context=("        b = 2", ""), start=4)
    report = score(text, source=lambda path: source)
    capture = next(s for s in report.signals if s.rule == "function.graph-capture")
    assert capture.function == "capture"


def test_enclosing_function_handles_nesting_blank_lines_and_module_level():
    lines = ["import x", "", "class A:", "    def f(self):", "        if y:", "", "            z()",
             "    def g(self):", "        pass", "w = 1"]
    assert risk.enclosing_function(lines, 7) == "f"
    assert risk.enclosing_function(lines, 9) == "g"
    assert risk.enclosing_function(lines, 1) is None
    assert risk.enclosing_function(lines, 99) is None


def test_dependency_pins_fire_in_manifests_only():
    manifest = score(file_diff("python/pyproject.toml", ['  "torch==2.8.0",'], ['  "torch==2.9.1",']))
    code = score(file_diff("engine/util.py", ["torch==2.8.0"], ["torch==2.9.1"]))
    docker = score(file_diff("docker/Dockerfile", ["ARG CUDA_VERSION=12.8.1"], ["ARG CUDA_VERSION=12.9.1"]))
    assert "dependency.kernels" in rules_fired(manifest)
    assert "dependency.kernels" not in rules_fired(code)
    assert "dependency.cuda" in rules_fired(docker)


def test_a_pin_of_a_look_alike_package_does_not_fire():
    report = score(file_diff("requirements.txt", ["torchvision==0.1"], ["torchvision==0.2"]))
    assert "dependency.kernels" not in rules_fired(report)


def test_signals_of_one_category_count_once_categories_combine():
    one = score(file_diff("a/custom_all_reduce.py", ["a"], ["b"]))
    both = score(file_diff("a/custom_all_reduce.py", ["a"], ["b"]) + file_diff("b/pynccl.py", ["a"], ["b"]))
    three = score(file_diff("a/custom_all_reduce.py", ["a"], ["b"]) + file_diff("b/cuda_graph_runner.py", ["a"], ["b"]))
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


@given(st.lists(st.sampled_from(["engine/pynccl.py", "docs/a.md", "x/attention/b.py", "y.py",
                                 "requirements.txt", "tests/t.py"]), min_size=1, max_size=6),
       st.lists(st.sampled_from(["x.item()", "a = 1", "torch==2.1", "NCCL_X=1", "dist.barrier()"]),
                min_size=1, max_size=5))
@settings(max_examples=100)
def test_scores_stay_in_range_and_levels_agree_with_thresholds(paths, lines):
    text = "".join(file_diff(p, lines, lines[::-1]) for p in paths)
    report = score(text)
    assert 0 <= report.score <= 100
    assert report.level == config.Thresholds().level(report.score)
    assert all(0 <= f.score <= 100 for f in report.files)
