"""The benchmarks' environment: what a GPU program needs and the config adds, never the runner's secrets."""

from __future__ import annotations

import pytest

from bot.core.config import schema
from bot.runner.environment import benchmark_env

RUNNER = {
    "PATH": "/usr/bin", "HOME": "/home/runner", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp/job",
    "LD_LIBRARY_PATH": "/usr/local/cuda/lib64", "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_ALGO": "Ring",
    "NVIDIA_VISIBLE_DEVICES": "all", "TORCH_NCCL_BLOCKING_WAIT": "1", "SGLANG_ENABLE_JIT": "1",
    "GITHUB_TOKEN": "t", "GITHUB_ENV": "/runner/env", "GITHUB_OUTPUT": "/runner/out", "GITHUB_PATH": "/runner/path",
    "ACTIONS_RUNTIME_TOKEN": "t", "ACTIONS_ID_TOKEN_REQUEST_URL": "https://x", "RUNNER_TEMP": "/runner/temp",
    "VLLM_API_KEY": "k", "SGLANG_AUTH_TOKEN": "k", "HF_TOKEN": "k", "HF_HOME": "/models", "AWS_SECRET_ACCESS_KEY": "k",
    "PYTHONPATH": "/somewhere", "TRITON_CACHE_DIR": "/cache/triton", "TRITON_API_TOKEN": "k",
}


def test_a_gpu_program_gets_what_it_needs_and_nothing_else():
    assert benchmark_env(environ=RUNNER) == {
        "PATH": "/usr/bin", "HOME": "/home/runner", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp/job",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64", "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_ALGO": "Ring",
        "NVIDIA_VISIBLE_DEVICES": "all", "TORCH_NCCL_BLOCKING_WAIT": "1", "SGLANG_ENABLE_JIT": "1"}


def test_the_config_adds_names_and_prefixes_but_a_prefix_never_passes_a_secret():
    env = benchmark_env(["HF_HOME", "PYTHONPATH", "TRITON_*"], environ=RUNNER)
    assert {k: env[k] for k in ("HF_HOME", "PYTHONPATH", "TRITON_CACHE_DIR")} == \
        {"HF_HOME": "/models", "PYTHONPATH": "/somewhere", "TRITON_CACHE_DIR": "/cache/triton"}
    assert "TRITON_API_TOKEN" not in env and "HF_TOKEN" not in env
    assert benchmark_env(["HF_TOKEN"], environ=RUNNER)["HF_TOKEN"] == "k"  # named exactly: the user's choice


def test_the_runner_s_channels_never_pass_even_when_named():
    env = benchmark_env(["GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "GITHUB_*"], environ=RUNNER)
    assert not [key for key in env if key.startswith(("GITHUB_", "ACTIONS_", "RUNNER_"))]


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "GITHUB_*", "ACTIONS_RUNTIME_TOKEN", "RUNNER_TEMP"])
def test_the_config_may_not_name_them(name):
    with pytest.raises(schema.ConfigError, match=rf"bench.pass_env: {name.replace('*', '[*]')}: GITHUB_\*, "
                                                 r"ACTIONS_\* and RUNNER_\* variables are never given to benchmarks"):
        schema.load(f"bench:\n  pass_env: ['{name}']\n")


@pytest.mark.parametrize("name", ["*", "A B", "X=1", "*_TOKEN"])
def test_pass_env_takes_names_or_prefixes_only(name):
    with pytest.raises(schema.ConfigError, match=r"bench.pass_env\[0\]: String should match pattern"):
        schema.load(f"bench:\n  pass_env: ['{name}']\n")
