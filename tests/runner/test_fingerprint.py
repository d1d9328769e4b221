"""The fingerprint records what it can and leaves out what it cannot, never failing the run."""

from __future__ import annotations

from bot.adapters.git_repo import GitRepo
from bot.runner import fingerprint

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
    environ = {"NCCL_ALGO": "Ring", "CUDA_VISIBLE_DEVICES": "0,1", "TORCH_NCCL_BLOCKING_WAIT": "1",
               "SGLANG_X": "y", "HOME": "/root", "GITHUB_TOKEN": "secret"}
    assert fingerprint.env_vars(environ) == {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_ALGO": "Ring",
                                             "SGLANG_X": "y", "TORCH_NCCL_BLOCKING_WAIT": "1"}


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
