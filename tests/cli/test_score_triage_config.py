"""The `perfbot score`, `triage` and `config` verbs as a user runs them: output, exit codes and
one-line errors."""

from __future__ import annotations

import io
import json

import pytest

from bot.cli.main import main

HOT = """\
diff --git a/vllm/distributed/device_communicators/pynccl.py b/vllm/distributed/device_communicators/pynccl.py
index 1111111..2222222 100644
--- a/vllm/distributed/device_communicators/pynccl.py
+++ b/vllm/distributed/device_communicators/pynccl.py
@@ -1,2 +1,3 @@ def all_reduce(self, x):
     y = x
+    torch.cuda.synchronize()
     return y
"""


def run(capsys, *argv, stdin: bytes | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *fragments):
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("perfbot: error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


# --- score ---------------------------------------------------------------------------------------


def test_score_reads_a_file_and_prints_json_per_the_contract(tmp_path, capsys):
    diff = tmp_path / "change.diff"
    diff.write_text(HOT)
    code, out, _ = run(capsys, "score", str(diff), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["level"] == "high" and data["profile"] == "vllm"
    assert data["files"][0]["path"].endswith("pynccl.py") and data["reasons"]


def test_score_reads_standard_input(capsys, monkeypatch):
    code, out, _ = run(capsys, "score", "-", stdin=HOT.encode(), monkeypatch=monkeypatch)
    assert code == 0 and out.startswith("risk: ") and "(high)" in out.splitlines()[0]


def test_score_fail_on_exits_1_at_or_above_the_level(tmp_path, capsys):
    diff = tmp_path / "d.diff"
    diff.write_text(HOT)
    assert run(capsys, "score", str(diff), "--fail-on", "high")[0] == 1
    diff.write_text(HOT.replace("vllm/distributed/device_communicators/pynccl.py", "docs/x.md"))
    assert run(capsys, "score", str(diff), "--fail-on", "low")[0] == 0


def test_score_markdown_is_the_pr_table(tmp_path, capsys):
    diff = tmp_path / "d.diff"
    diff.write_text(HOT)
    code, out, _ = run(capsys, "score", str(diff), "--format", "markdown")
    assert code == 0 and out.startswith("### 🟥 Performance risk: **high**") and "| weight |" in out


def test_score_of_an_empty_diff_is_none(tmp_path, capsys):
    diff = tmp_path / "empty.diff"
    diff.write_bytes(b"")
    code, out, _ = run(capsys, "score", str(diff), "--format", "json")
    assert code == 0 and json.loads(out)["level"] == "none"


def test_score_of_binary_garbage_is_none_with_a_warning(tmp_path, capsys):
    diff = tmp_path / "noise.bin"
    diff.write_bytes(bytes(range(256)) * 50)
    code, out, _ = run(capsys, "score", str(diff), "--format", "json")
    assert code == 0 and json.loads(out)["warnings"]


def test_score_of_a_missing_file_is_a_one_line_error(tmp_path, capsys):
    code, _, err = run(capsys, "score", str(tmp_path / "nope.diff"))
    assert_one_line_error(code, err, "nope.diff", "cannot read")


def test_score_of_a_directory_is_a_one_line_error(tmp_path, capsys):
    code, _, err = run(capsys, "score", str(tmp_path))
    assert_one_line_error(code, err, "is a directory")


def test_score_over_the_size_limit_is_a_one_line_error(tmp_path, capsys):
    diff = tmp_path / "big.diff"
    diff.write_bytes(b"+" * (2 * 2**20))
    code, _, err = run(capsys, "score", str(diff), "--max-mib", "1")
    assert_one_line_error(code, err, "larger than the 1 MiB limit")


@pytest.mark.slow
def test_score_of_a_50_mib_diff_completes(tmp_path, capsys):
    body = "".join(f"+    value_{i} = tensor.item() + {i}\n" for i in range(1000))
    sections = [
        f"diff --git a/engine/comm_{n}/pynccl.py b/engine/comm_{n}/pynccl.py\n"
        f"--- a/engine/comm_{n}/pynccl.py\n+++ b/engine/comm_{n}/pynccl.py\n"
        f"@@ -0,0 +1,1000 @@ def all_reduce(self, x):\n{body}"
        for n in range(40)
    ]
    one = "".join(sections)
    diff = tmp_path / "huge.diff"
    diff.write_text(one * (50 * 2**20 // len(one) + 1))
    assert diff.stat().st_size > 50 * 2**20
    code, out, _ = run(capsys, "score", str(diff), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["level"] == "high" and len(data["files"]) > 1000


def test_an_invalid_config_is_a_one_line_error_naming_the_key(tmp_path, capsys):
    diff, cfg = tmp_path / "d.diff", tmp_path / "perfbot.yml"
    diff.write_text(HOT)
    cfg.write_text("risk:\n  thresholds: {high: 500}\n")
    code, _, err = run(capsys, "score", str(diff), "--config", str(cfg))
    assert_one_line_error(code, err, "perfbot.yml: risk.thresholds.high")


def test_a_usage_mistake_is_one_line_not_the_usage_block(capsys):
    code, _, err = run(capsys, "score", "--format", "yaml")
    assert_one_line_error(code, err, "--format", "invalid choice")


def test_score_uses_the_checkout_for_config_and_enclosing_functions(git_builder, tmp_path, capsys):
    source = "class Runner:\n    def capture(self):\n        a = 1\n        b = 2\n"
    git_builder.commit(
        "base",
        {
            "engine/runner.py": source,
            ".github/perfbot.yml": "risk: {thresholds: {low: 1, medium: 2, high: 3}}\n",
        },
    )
    diff = tmp_path / "d.diff"
    diff.write_text(
        "diff --git a/engine/runner.py b/engine/runner.py\n--- a/engine/runner.py\n"
        "+++ b/engine/runner.py\n@@ -3,2 +3,2 @@ class Runner:\n         a = 1\n"
        "-        b = 1\n+        b = 2\n"
    )
    code, out, _ = run(capsys, "score", str(diff), "--repo", str(git_builder.root), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["level"] == "high"  # the repository's own thresholds
    assert any(s["function"] == "capture" for s in data["signals"])


# --- triage --------------------------------------------------------------------------------------


def sglang_like_history(git_builder):
    """A history shaped like SGLang's bba2fc4..3207427: one communicator fix among others."""
    comm = "python/sglang/srt/distributed"
    files = {
        f"{comm}/device_communicators/pynccl.py": "class PyNcclCommunicator:\n    def all_reduce(self, x):\n        return x\n",
        f"{comm}/parallel_state.py": "def graph_capture():\n    pass\n",
        f"{comm}/device_communicators/custom_all_reduce.py": "def custom_all_reduce(x):\n    return x\n",
        "python/sglang/srt/managers/tokenizer_manager.py": "def validate(r):\n    return r\n",
        "python/sglang/multimodal_gen/runtime/executor.py": "def run():\n    pass\n",
        "docs/index.md": "hello\n",
    }
    base = git_builder.commit("base", files)
    git_builder.commit(
        "[diffusion] fix executor rank",
        {"python/sglang/multimodal_gen/runtime/executor.py": "def run():\n    return 1\n"},
    )
    guilty = git_builder.commit(
        "Fix PCG MoE Error",
        {
            f"{comm}/device_communicators/pynccl.py": "class PyNcclCommunicator:\n    def all_reduce(self, x):\n        y = x.clone()\n        return y\n",
            f"{comm}/parallel_state.py": "def graph_capture():\n    torch.cuda.synchronize()\n",
            f"{comm}/device_communicators/custom_all_reduce.py": "def custom_all_reduce(x):\n    return x.contiguous()\n",
        },
    )
    git_builder.commit(
        "Move validation to the tokenizer manager",
        {"python/sglang/srt/managers/tokenizer_manager.py": "def validate(r):\n    assert r\n    return r\n"},
    )
    git_builder.commit("docs: typo", {"docs/index.md": "hello!\n"})
    git_builder.commit(
        "[diffusion] warmup by default",
        {"python/sglang/multimodal_gen/runtime/executor.py": "def run():\n    return 2\n"},
    )
    return base, guilty


def test_triage_ranks_the_communicator_fix_first_and_diffusion_last(git_builder, capsys):
    base, guilty = sglang_like_history(git_builder)
    code, out, _ = run(
        capsys, "triage", f"{base[:7]}..HEAD", "--repo", str(git_builder.root), "--format", "json"
    )
    data = json.loads(out)
    assert code == 0 and data["profile"] == "sglang" and data["range"] == f"{base[:7]}..HEAD"
    commits = data["commits"]
    assert commits[0]["sha"] == guilty and commits[0]["level"] == "high"
    named = " ".join(commits[0]["reasons"])
    for name in ("pynccl.py", "parallel_state.py", "custom_all_reduce.py"):
        assert name in named
    last = {c["subject"] for c in commits[-3:]}  # the docs and [diffusion] commits, all at zero
    assert last == {"docs: typo", "[diffusion] fix executor rank", "[diffusion] warmup by default"}
    assert all(c["score"] == 0 and c["level"] == "none" for c in commits[-3:])
    assert [c["score"] for c in commits] == sorted((c["score"] for c in commits), reverse=True)
    assert {f["path"] for f in commits[0]["files"]} >= {"python/sglang/srt/distributed/parallel_state.py"}


def test_triage_text_shows_rank_reasons_and_stat(git_builder, capsys):
    base, guilty = sglang_like_history(git_builder)
    code, out, _ = run(capsys, "triage", f"{base}..HEAD", "--repo", str(git_builder.root), "--limit", "1")
    assert code == 0 and f"1. {guilty[:10]}" in out and "pynccl.py" in out and "insertion" in out
    assert out.count(". ") >= 1 and "2. " not in out


def test_triage_errors_are_one_line(git_builder, tmp_path, capsys):
    base, _ = sglang_like_history(git_builder)
    repo = str(git_builder.root)
    assert_one_line_error(
        *run(capsys, "triage", "nope..HEAD", "--repo", repo)[::2], "unknown revision 'nope'"
    )
    assert_one_line_error(*run(capsys, "triage", "HEAD..HEAD", "--repo", repo)[::2], "has no commits")
    assert_one_line_error(*run(capsys, "triage", "HEAD", "--repo", repo)[::2], "expected a range")
    assert_one_line_error(
        *run(capsys, "triage", "a..b", "--repo", str(tmp_path))[::2], "not a git repository"
    )


def test_triage_fail_on(git_builder, capsys):
    base, _ = sglang_like_history(git_builder)
    assert (
        run(capsys, "triage", f"{base}..HEAD", "--repo", str(git_builder.root), "--fail-on", "high")[0] == 1
    )


# --- config ---------------------------------------------------------------------------------------


def test_config_validate_accepts_a_good_file(tmp_path, capsys):
    cfg = tmp_path / "perfbot.yml"
    cfg.write_text("risk: {profile: sglang, disable: [cold.examples]}\n")
    code, out, _ = run(capsys, "config", "validate", str(cfg))
    assert code == 0 and "valid" in out and "profile sglang" in out


def test_config_validate_lists_every_problem_with_its_key_path(tmp_path, capsys):
    cfg = tmp_path / "perfbot.yml"
    cfg.write_text("version: 2\nrisk: {profil: x}\n")
    code, _, err = run(capsys, "config", "validate", str(cfg))
    assert code == 2
    assert err.splitlines() == [
        f"{cfg}: version: 2 is not allowed (expected 1)",
        f"{cfg}: risk.profil: unknown key",
    ]


def test_config_validate_checks_rule_ids_against_the_profile(tmp_path, capsys):
    cfg = tmp_path / "perfbot.yml"
    cfg.write_text("risk: {profile: vllm, disable: [sglang.cold]}\n")
    code, _, err = run(capsys, "config", "validate", str(cfg))
    assert code == 2 and "unknown rule id 'sglang.cold'" in err


def test_config_schema_is_json(capsys):
    code, out, _ = run(capsys, "config", "schema")
    assert code == 0 and json.loads(out)["title"] == "RepoConfig"


def test_config_rules_lists_the_merged_rules(tmp_path, capsys):
    cfg = tmp_path / "perfbot.yml"
    cfg.write_text("risk: {profile: vllm, weights: {path.pynccl: 7}, disable: [cold.docs]}\n")
    code, out, _ = run(capsys, "config", "rules", "--config", str(cfg), "--format", "json")
    rules = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and rules["path.pynccl"]["weight"] == 7 and "vllm.kernels" in rules
    assert "cold.docs" not in rules


@pytest.mark.parametrize("argv", [[], ["config"], ["nope"]])
def test_missing_or_unknown_commands_are_one_line_errors(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err)


# --- papercuts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stdin", [b"", b"hello, not a diff\n"])
def test_score_gating_on_nothing_is_an_error_not_a_pass(capsys, monkeypatch, stdin):
    code, _, err = run(capsys, "score", "-", "--fail-on", "medium", stdin=stdin, monkeypatch=monkeypatch)
    assert_one_line_error(code, err, "standard input: no file changes found", "--fail-on medium")
    # without a gate it is still scored: none
    code, out, _ = run(capsys, "score", "-", stdin=stdin, monkeypatch=monkeypatch)
    assert code == 0 and out.startswith("risk: 0/100 (none)")


def test_score_repo_reads_no_file_outside_the_work_tree(git_builder, tmp_path, capsys):
    secret = tmp_path / "secret.py"
    secret.write_text("class Secret:\n    def all_reduce(self):\n        a = 1\n        b = 2\n")
    git_builder.commit("base", {"engine/runner.py": "x = 1\n"})
    (git_builder.root / "engine" / "link.py").symlink_to(secret)
    hunk = "@@ -3,2 +3,2 @@\n         a = 1\n-        b = 1\n+        b = 2\n"
    for path in ("../secret.py", str(secret).lstrip("/"), "engine/link.py"):
        header = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        diff = tmp_path / "d.diff"
        diff.write_text(header + hunk)
        code, out, _ = run(capsys, "score", str(diff), "--repo", str(git_builder.root), "--format", "json")
        assert code == 0
        assert all(s["function"] != "all_reduce" for s in json.loads(out)["signals"]), path


@pytest.mark.parametrize(
    "argv, start",
    [
        (["score", "--format", "yaml"], "perfbot: error: score: argument --format: invalid choice"),
        (["config", "rules", "--profile", "x"], "perfbot: error: config rules: argument --profile"),
        (["score", "--bogus"], "perfbot: error: unrecognized arguments: --bogus"),
    ],
)
def test_a_usage_mistake_says_perfbot_error_once(capsys, argv, start):
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err)
    assert err.startswith(start) and "perfbot: error: perfbot" not in err


def test_triage_limit_says_how_many_were_ranked(git_builder, capsys):
    base, _ = sglang_like_history(git_builder)
    code, out, _ = run(
        capsys, "triage", f"{base}..HEAD", "--repo", str(git_builder.root), "--limit", "2", "--no-files"
    )
    assert code == 0 and out.splitlines()[0].startswith(f"triage of {base}..HEAD: 2 of 5 commits")
    _, out, _ = run(
        capsys, "triage", f"{base}..HEAD", "--repo", str(git_builder.root), "--limit", "2", "--format", "json"
    )
    data = json.loads(out)
    assert data["total"] == 5 and len(data["commits"]) == 2


def test_config_rules_profile_auto_looks_at_the_repository(git_builder, capsys, monkeypatch):
    sglang_like_history(git_builder)
    code, out, _ = run(
        capsys, "config", "rules", "--profile", "auto", "--repo", str(git_builder.root), "--format", "json"
    )
    assert code == 0 and any(r["id"].startswith("sglang.") for r in json.loads(out))
    monkeypatch.chdir(git_builder.root)
    _, out, _ = run(capsys, "config", "rules", "--format", "json")  # auto by default, like score
    assert any(r["id"].startswith("sglang.") for r in json.loads(out))


@pytest.mark.parametrize(
    "limit,message",
    [
        ("-1", "argument --limit: expected a positive integer, got -1"),
        ("0", "argument --limit: expected a positive integer, got 0"),
        ("two", "argument --limit: invalid positive_int value: 'two'"),
    ],
)
def test_triage_refuses_a_limit_that_is_not_a_positive_number(capsys, limit, message):
    code, out, err = run(capsys, "triage", "HEAD~1..HEAD", "--limit", limit)
    assert_one_line_error(code, err, message)
    assert out == ""


@pytest.mark.parametrize("stdin", [b"", b"  \n\n"])
def test_empty_input_to_score_asks_whether_it_is_a_diff(capsys, monkeypatch, stdin):
    code, out, _ = run(capsys, "score", "--format", "json", stdin=stdin, monkeypatch=monkeypatch)
    assert code == 0
    assert json.loads(out)["warnings"] == ["standard input is empty (is it a unified diff?)"]
    code, out, _ = run(capsys, "score", stdin=stdin, monkeypatch=monkeypatch)
    assert "warning: standard input is empty (is it a unified diff?)" in out


BAD_CONFIG = """\
risk:
  profile: sglang
  disable: [sglang.cold, no-such-rule]
  weights: {also-missing: 5}
  thresholds: {low: 50, medium: 10}
bench:
  suites:
    verify-step:
      kind: verify-step
      preset: huge
      shape: {layerz: 3}
    smoke:
      kind: command
      metrics: {step_ms: {better: sideways}}
"""


def test_config_validate_reports_field_and_rule_id_problems_together_in_the_files_words(tmp_path, capsys):
    cfg = tmp_path / "perfbot.yml"
    cfg.write_text(BAD_CONFIG)
    code, out, err = run(capsys, "config", "validate", str(cfg))
    assert code == 2 and out == ""
    problems = [line.removeprefix(f"{cfg}: ") for line in err.splitlines()]
    assert problems == [
        "risk.thresholds: thresholds must satisfy low <= medium <= high",
        "bench.suites.verify-step.preset: 'huge' is not allowed (expected 'auto', 'full' or 'tiny')",
        "bench.suites.verify-step.shape.layerz: unknown key (expected one of 'layers', 'hidden', 'heads', "
        "'kv_heads', 'head_dim', 'experts', 'topk', 'moe_intermediate', 'context', 'vocab', 'batch', "
        "'num_steps', 'draft_topk' or 'num_draft_tokens')",
        "bench.suites.smoke.command: missing (required)",
        "bench.suites.smoke.metrics.step_ms.better: 'sideways' is not allowed (expected 'lower' or 'higher')",
        "risk.disable[1]: unknown rule id 'no-such-rule'",
        "risk.weights.also-missing: unknown rule id 'also-missing'",
    ]


@pytest.mark.parametrize(
    "text,problem",
    [
        ("risk: [1, 2]\n", "risk: expected a mapping of keys to values, not a list"),
        (
            "bench: {suites: {a: {kind: nope}}}\n",
            "bench.suites.a.kind: 'nope' is not a suite kind (expected one of 'command', 'google-benchmark', 'hyperfine', 'pytest-benchmark', 'sglang-bench-one-batch', 'sglang-bench-serving', 'sglang-eagle3', 'verify-step', 'vllm-bench-serve')",
        ),
        (
            "bench: {suites: {a: {}}}\n",
            "bench.suites.a: missing 'kind' (one of 'command', 'google-benchmark', 'hyperfine', 'pytest-benchmark', 'sglang-bench-one-batch', 'sglang-bench-serving', 'sglang-eagle3', 'verify-step', 'vllm-bench-serve')",
        ),
        (
            "bench: {suites: {c: {kind: command, command: 7}}}\n",
            "bench.suites.c.command: Input should be a valid string",
        ),
        (
            "risk: {disable: [sglang.cold]}\n",
            "risk.disable[0]: unknown rule id 'sglang.cold' in profiles generic and vllm, which 'profile: auto' may pick",
        ),
    ],
)
def test_config_validate_names_no_model_of_the_code(tmp_path, capsys, text, problem):
    cfg = tmp_path / "perfbot.yml"
    cfg.write_text(text)
    code, _, err = run(capsys, "config", "validate", str(cfg))
    assert code == 2 and err.splitlines() == [f"{cfg}: {problem}"]
    assert "Config" not in err and "instance of" not in err


@pytest.mark.parametrize("value,shown", [("[1]", "[1]"), ("{a: 1}", "{'a': 1}")])
def test_config_validate_reports_a_profile_that_is_not_a_name_as_the_schema_does(
    tmp_path, capsys, value, shown
):
    cfg = tmp_path / "perfbot.yml"
    cfg.write_text(f"risk: {{profile: {value}}}\n")
    code, out, err = run(capsys, "config", "validate", str(cfg))
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"{cfg}: risk.profile: {shown} is not allowed (expected 'auto', 'generic', 'sglang' or 'vllm')"
    ]
