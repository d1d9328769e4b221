"""The fingerprint records what it can and leaves out what it cannot, never failing the run."""

from __future__ import annotations

import hashlib
import json

from bot.adapters.git_repo import GitRepo
from bot.core.judge import envdiff, results, stats
from bot.core.render import compare as render_compare
from bot.runner import fingerprint
from tests.core.judge.results_data import EAGLE3, FINGERPRINT, document

GPU_CSV = (
    "0, NVIDIA H200, GPU-3817, 00000000:00:06.0, 580.159.04, 143771, Enabled, 465, 3201, 1980, 3201, "
    "114.34, 700.00, 5, 5, 16, 16, 34, Default\n"
    "1, NVIDIA H200, GPU-dab0, 00000000:00:07.0, 580.159.04, 143771, Enabled, 450, 3201, 1980, 3201, "
    "[N/A], 700.00, 5, 5, 16, 16, 36, Default\n"
)


def test_gpu_rows_are_read_by_field_name_and_unavailable_values_left_out():
    first, second = fingerprint.parse_gpu_csv(GPU_CSV)
    assert first["name"] == "NVIDIA H200"
    assert first["clocks.max.sm"] == "1980"
    assert first["pcie.link.width.current"] == "16"
    assert "power.draw" not in second
    assert fingerprint.parse_gpu_csv("garbage\n") == []


def test_only_the_variables_that_change_gpu_behaviour_are_recorded():
    environ = {
        "NCCL_ALGO": "Ring",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "TORCH_NCCL_BLOCKING_WAIT": "1",
        "SGLANG_X": "y",
        "HOME": "/root",
        "GITHUB_TOKEN": "secret",
    }
    assert fingerprint.env_vars(environ) == {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "NCCL_ALGO": "Ring",
        "SGLANG_X": "sha256:a1fce4363854",
        "TORCH_NCCL_BLOCKING_WAIT": "1",
    }


# What a review found recorded, value and all, in the results anyone who can read the pull request
# can download: names that say nothing, values no shape caught, under allowed prefixes.
UNKNOWN = {
    "SGLANG_MODEL_MIRROR": "internal-mirror-7.corp.example",
    "VLLM_TENANT": "acme-prod",
    "NCCL_COMM_ID": "10.0.3.7:29500",
    "TORCH_PLUGIN_OPTS": "customer=acme;region=eu",
}


def test_only_documented_tuning_knobs_are_recorded_with_their_values_every_other_one_hashed():
    environ = {**UNKNOWN, "NCCL_ALGO": "Ring", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    recorded = fingerprint.env_vars(environ)
    assert recorded["NCCL_ALGO"] == "Ring"
    assert recorded["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    for name, value in UNKNOWN.items():
        assert recorded[name] == "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:12]
        assert value not in json.dumps(recorded)
    assert all(name.startswith(fingerprint.ENV_PREFIXES) for name in fingerprint.TUNING_VARIABLES)


def test_a_hashed_value_still_shows_as_changed_in_the_environment_diff():
    base = {**FINGERPRINT, "env": fingerprint.env_vars({**UNKNOWN, "NCCL_ALGO": "Ring"})}
    head = {
        **FINGERPRINT,
        "env": fingerprint.env_vars({**UNKNOWN, "VLLM_TENANT": "acme-staging", "NCCL_ALGO": "Tree"}),
    }
    assert envdiff.diff(base, base) == []  # the same values hash the same
    found = {d.key: d for d in envdiff.diff(base, head)}
    assert sorted(found) == ["env.NCCL_ALGO", "env.VLLM_TENANT"]
    tenant = found["env.VLLM_TENANT"]
    assert (tenant.base, tenant.head) == (fingerprint.hashed("acme-prod"), fingerprint.hashed("acme-staging"))
    assert tenant.material and tenant.category == "runtime environment"
    assert (found["env.NCCL_ALGO"].base, found["env.NCCL_ALGO"].head) == ("Ring", "Tree")
    # The comment withholds the verdict and shows that the value changed, not what it is.
    loaded = results.load(json.dumps(document(EAGLE3, base_fingerprint=base, head_fingerprint=head)))
    comparison = stats.decide(loaded)
    assert comparison.verdict == "inconclusive" and comparison.withheld
    markdown = render_compare.compare_markdown(loaded, comparison)
    assert (
        f"| env.VLLM\\_TENANT | {fingerprint.hashed('acme-prod')} | {fingerprint.hashed('acme-staging')} |"
        in markdown
    )
    assert "acme" not in markdown


def test_the_cpu_model_is_read_from_cpuinfo():
    assert fingerprint.cpu_model("processor: 0\nmodel name\t: AMD EPYC 9654\n") == "AMD EPYC 9654"
    assert fingerprint.cpu_model(None) is None


def test_a_machine_without_nvidia_smi_or_torch_gives_absent_fields(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing to run: no nvidia-smi
    data = fingerprint.machine(python=str(tmp_path / "no-python"))
    assert "gpus" not in data and "topology" not in data and "torch" not in data
    assert data["cpu"]["cores"] >= 1
    assert fingerprint.clocks().keys() == {"taken_at"}


def test_the_python_stack_names_installed_versions():
    stack = fingerprint.python_stack(__import__("sys").executable)
    assert stack["python"]
    assert "torch" in stack["packages"]  # the test extra installs torch
    assert stack["torch"]["version"].startswith(stack["packages"]["torch"].split("+")[0])


def test_the_checkout_shows_the_revision_a_dirty_tree_and_the_reflog(git_builder):
    first = git_builder.commit("first", {"a.txt": "1"})
    second = git_builder.commit("second", {"a.txt": "2"})
    repo = GitRepo.open(git_builder.root)
    clean = fingerprint.checkout(repo, first)
    assert clean["sha"] == first and clean["checkout_head"] == second and clean["dirty"] is False
    assert clean["reflog"][0].endswith("commit: second")
    (git_builder.root / "a.txt").write_text("changed")
    assert fingerprint.checkout(repo, first)["dirty"] is True
