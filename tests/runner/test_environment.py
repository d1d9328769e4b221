"""The benchmarks' environment: what a GPU program needs and the config adds, never the runner's secrets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.config import schema
from bot.runner import fingerprint
from bot.runner.environment import KEPT_PREFIXES, benchmark_env

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


# Secrets that an allowed prefix used to let through (a review found each on a real runner's list).
LEAKED = {"SGLANG_DSN": "postgresql://bench@db/runs", "VLLM_S3_URL": "s3://AKIAEXAMPLE:wJalrXUt@bucket/models",
          "PYTORCH_JWT": "opaque", "SGLANG_DB_PASS": "hunter2", "VLLM_HUB_COOKIE": "session=abc",
          "NCCL_PROXY_URL": "http://user:pw@proxy:3128", "TORCH_HUB_AUTHORIZATION": "Bearer x",
          "CUDA_MIRROR": "https://ghp_abc@mirror.example/cuda", "SGLANG_SIGNING_KEY": "k", "VLLM_KEY": "k",
          "SGLANG_CREDS": "k", "TORCH_X": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
          # A PEM header made at run time, so that no file holds what secret scanners take for a key.
          "NVIDIA_CERT": "-----BEGIN " + "PRIVATE KEY-----\nMII\n"}


def test_secret_shaped_names_and_values_never_pass_a_prefix_nor_reach_the_fingerprint():
    environ = {**RUNNER, **LEAKED}
    env = benchmark_env(["SGLANG_*"], environ=environ)
    assert not set(LEAKED) & set(env)
    assert not set(LEAKED) & set(fingerprint.env_vars(environ))
    # Named exactly, the config's author asked for it: the benchmark gets it, the fingerprint never.
    assert benchmark_env(["SGLANG_DSN"], environ=environ)["SGLANG_DSN"] == LEAKED["SGLANG_DSN"]
    assert "SGLANG_DSN" not in fingerprint.env_vars(benchmark_env(["SGLANG_DSN"], environ=environ))


@pytest.mark.parametrize("name", ["NCCL_IB_PKEY", "SGLANG_BYPASS_CACHE", "TORCH_COMPASS", "VLLM_KEYBOARD",
                                  "NCCL_SOCKET_IFNAME", "CUDA_MODULE_LOADING", "TORCH_CUDA_ARCH_LIST"])
def test_names_that_only_contain_a_short_secret_word_pass(name):
    assert benchmark_env(environ={name: "1"}) == {name: "1"}


def test_the_runner_s_tracking_id_reaches_every_process_so_its_orphan_cleanup_finds_them():
    assert benchmark_env(environ={**RUNNER, "RUNNER_TRACKING_ID": "github_5f2a"})["RUNNER_TRACKING_ID"] == \
        "github_5f2a"


def test_where_perfbot_writes_its_results_is_never_passed():
    environ = {**RUNNER, "PERFBOT_BENCH_OUT": "/r/results.json", "PERFBOT_BENCH_SUMMARY": "/r/s.md"}
    assert not {"PERFBOT_BENCH_OUT", "PERFBOT_BENCH_SUMMARY"} & set(benchmark_env(["PERFBOT_BENCH_OUT", "PERFBOT_*"],
                                                                                   environ=environ))


WORDS = st.sampled_from(["TOKEN", "SECRET", "PASS", "PASSWORD", "PASSWD", "KEY", "API_KEY", "APIKEY", "DSN", "JWT",
                         "COOKIE", "COOKIES", "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "OAUTH", "PWD",
                         "PRIVATE_KEY", "ACCESS_KEY", "BEARER", "AUTHORIZATION", "SESSION_KEY"])
PARTS = st.from_regex(r"[A-Z][A-Z0-9]{0,7}", fullmatch=True)


@given(prefix=st.sampled_from(KEPT_PREFIXES), before=st.lists(PARTS, max_size=2), word=WORDS,
       after=st.lists(PARTS, max_size=2), case=st.sampled_from([str.upper, str.lower]))
def test_no_name_with_a_secret_word_passes_a_kept_prefix(prefix, before, word, after, case):
    name = prefix + "_".join([*before, case(word), *after])
    assert name not in benchmark_env(environ={name: "v"})
    assert name not in fingerprint.env_vars({name: "v"})


@given(scheme=st.from_regex(r"[a-z][a-z0-9+.-]{0,9}", fullmatch=True),
       user=st.from_regex(r"[A-Za-z0-9._~%!$&'()*+,;=:-]{1,20}", fullmatch=True),
       host=st.from_regex(r"[a-z0-9.-]{1,20}(:[0-9]{1,5})?", fullmatch=True),
       path=st.from_regex(r"(/[A-Za-z0-9._-]{0,10}){0,3}", fullmatch=True))
def test_no_url_with_credentials_passes_whatever_its_name(scheme, user, host, path):
    assert benchmark_env(environ={"NCCL_ENDPOINT": f"{scheme}://{user}@{host}{path}"}) == {}


@given(host=st.from_regex(r"[a-z0-9.-]{1,20}(:[0-9]{1,5})?", fullmatch=True),
       path=st.from_regex(r"(/[A-Za-z0-9._@-]{0,10}){0,3}", fullmatch=True))
def test_a_url_without_a_user_part_passes(host, path):
    assert benchmark_env(environ={"SGLANG_ENDPOINT": f"http://{host}{path}"}) == \
        {"SGLANG_ENDPOINT": f"http://{host}{path}"}
