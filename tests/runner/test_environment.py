"""The benchmarks' environment: what a GPU program needs and the config adds, never the runner's secrets."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.config import schema
from bot.runner import fingerprint
from bot.runner.environment import KEPT_PREFIXES, VALUE_SHAPES, benchmark_env, secret_shape, secret_value

RUNNER = {
    "PATH": "/usr/bin",
    "HOME": "/home/runner",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TMPDIR": "/tmp/job",
    "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
    "CUDA_VISIBLE_DEVICES": "0,1",
    "NCCL_ALGO": "Ring",
    "NVIDIA_VISIBLE_DEVICES": "all",
    "TORCH_NCCL_BLOCKING_WAIT": "1",
    "SGLANG_ENABLE_JIT": "1",
    "GITHUB_TOKEN": "t",
    "GITHUB_ENV": "/runner/env",
    "GITHUB_OUTPUT": "/runner/out",
    "GITHUB_PATH": "/runner/path",
    "ACTIONS_RUNTIME_TOKEN": "t",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://x",
    "RUNNER_TEMP": "/runner/temp",
    "VLLM_API_KEY": "k",
    "SGLANG_AUTH_TOKEN": "k",
    "HF_TOKEN": "k",
    "HF_HOME": "/models",
    "AWS_SECRET_ACCESS_KEY": "k",
    "PYTHONPATH": "/somewhere",
    "TRITON_CACHE_DIR": "/cache/triton",
    "TRITON_API_TOKEN": "k",
}


def test_a_gpu_program_gets_what_it_needs_and_nothing_else():
    assert benchmark_env(environ=RUNNER) == {
        "PATH": "/usr/bin",
        "HOME": "/home/runner",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp/job",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "NCCL_ALGO": "Ring",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "TORCH_NCCL_BLOCKING_WAIT": "1",
        "SGLANG_ENABLE_JIT": "1",
    }


def test_the_config_adds_names_and_prefixes_but_a_prefix_never_passes_a_secret():
    env = benchmark_env(["HF_HOME", "PYTHONPATH", "TRITON_*"], environ=RUNNER)
    assert {k: env[k] for k in ("HF_HOME", "PYTHONPATH", "TRITON_CACHE_DIR")} == {
        "HF_HOME": "/models",
        "PYTHONPATH": "/somewhere",
        "TRITON_CACHE_DIR": "/cache/triton",
    }
    assert "TRITON_API_TOKEN" not in env and "HF_TOKEN" not in env
    assert benchmark_env(["HF_TOKEN"], environ=RUNNER)["HF_TOKEN"] == "k"  # named exactly: the user's choice


def test_the_runner_s_channels_never_pass_even_when_named():
    env = benchmark_env(["GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "GITHUB_*"], environ=RUNNER)
    assert not [key for key in env if key.startswith(("GITHUB_", "ACTIONS_", "RUNNER_"))]


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "GITHUB_*", "ACTIONS_RUNTIME_TOKEN", "RUNNER_TEMP"])
def test_the_config_may_not_name_them(name):
    with pytest.raises(
        schema.ConfigError,
        match=rf"bench.pass_env: {name.replace('*', '[*]')}: GITHUB_\*, "
        r"ACTIONS_\* and RUNNER_\* variables are never given to benchmarks",
    ):
        schema.load(f"bench:\n  pass_env: ['{name}']\n")


@pytest.mark.parametrize("name", ["*", "A B", "X=1", "*_TOKEN"])
def test_pass_env_takes_names_or_prefixes_only(name):
    with pytest.raises(schema.ConfigError, match=r"bench.pass_env\[0\]: String should match pattern"):
        schema.load(f"bench:\n  pass_env: ['{name}']\n")


# Secrets that an allowed prefix used to let through (a review found each on a real runner's list).
LEAKED = {
    "SGLANG_DSN": "postgresql://bench@db/runs",
    "VLLM_S3_URL": "s3://AKIAEXAMPLE:wJalrXUt@bucket/models",
    "PYTORCH_JWT": "opaque",
    "SGLANG_DB_PASS": "hunter2",
    "VLLM_HUB_COOKIE": "session=abc",
    "NCCL_PROXY_URL": "http://user:pw@proxy:3128",
    "TORCH_HUB_AUTHORIZATION": "Bearer x",
    "CUDA_MIRROR": "https://ghp_abc@mirror.example/cuda",
    "SGLANG_SIGNING_KEY": "k",
    "VLLM_KEY": "k",
    "SGLANG_CREDS": "k",
    "TORCH_X": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
    # A PEM header made at run time, so that no file holds what secret scanners take for a key.
    "NVIDIA_CERT": "-----BEGIN " + "PRIVATE KEY-----\nMII\n",
}


def test_secret_shaped_names_and_values_never_pass_a_prefix_nor_reach_the_fingerprint():
    environ = {**RUNNER, **LEAKED}
    env = benchmark_env(["SGLANG_*"], environ=environ)
    assert not set(LEAKED) & set(env)
    assert not set(LEAKED) & set(fingerprint.env_vars(environ))
    # Named exactly, the config's author asked for it: the benchmark gets it, the fingerprint never.
    assert benchmark_env(["SGLANG_DSN"], environ=environ)["SGLANG_DSN"] == LEAKED["SGLANG_DSN"]
    assert "SGLANG_DSN" not in fingerprint.env_vars(benchmark_env(["SGLANG_DSN"], environ=environ))


@pytest.mark.parametrize(
    "name",
    [
        "NCCL_IB_PKEY",
        "SGLANG_BYPASS_CACHE",
        "TORCH_COMPASS",
        "VLLM_KEYBOARD",
        "NCCL_SOCKET_IFNAME",
        "CUDA_MODULE_LOADING",
        "TORCH_CUDA_ARCH_LIST",
    ],
)
def test_names_that_only_contain_a_short_secret_word_pass(name):
    assert benchmark_env(environ={name: "1"}) == {name: "1"}


def test_the_runner_s_tracking_id_reaches_every_process_so_its_orphan_cleanup_finds_them():
    assert (
        benchmark_env(environ={**RUNNER, "RUNNER_TRACKING_ID": "github_5f2a"})["RUNNER_TRACKING_ID"]
        == "github_5f2a"
    )


def test_where_perfbot_writes_its_results_is_never_passed():
    environ = {**RUNNER, "PERFBOT_BENCH_OUT": "/r/results.json", "PERFBOT_BENCH_SUMMARY": "/r/s.md"}
    assert not {"PERFBOT_BENCH_OUT", "PERFBOT_BENCH_SUMMARY"} & set(
        benchmark_env(["PERFBOT_BENCH_OUT", "PERFBOT_*"], environ=environ)
    )


WORDS = st.sampled_from(
    [
        "TOKEN",
        "SECRET",
        "PASS",
        "PASSWORD",
        "PASSWD",
        "KEY",
        "API_KEY",
        "APIKEY",
        "DSN",
        "JWT",
        "COOKIE",
        "COOKIES",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "AUTH",
        "OAUTH",
        "PWD",
        "PRIVATE_KEY",
        "ACCESS_KEY",
        "BEARER",
        "AUTHORIZATION",
        "SESSION_KEY",
    ]
)
PARTS = st.from_regex(r"[A-Z][A-Z0-9]{0,7}", fullmatch=True)


@given(
    prefix=st.sampled_from(KEPT_PREFIXES),
    before=st.lists(PARTS, max_size=2),
    word=WORDS,
    after=st.lists(PARTS, max_size=2),
    case=st.sampled_from([str.upper, str.lower]),
)
def test_no_name_with_a_secret_word_passes_a_kept_prefix(prefix, before, word, after, case):
    name = prefix + "_".join([*before, case(word), *after])
    assert name not in benchmark_env(environ={name: "v"})
    assert name not in fingerprint.env_vars({name: "v"})


@given(
    scheme=st.from_regex(r"[a-z][a-z0-9+.-]{0,9}", fullmatch=True),
    user=st.from_regex(r"[A-Za-z0-9._~%!$&'()*+,;=:-]{1,20}", fullmatch=True),
    host=st.from_regex(r"[a-z0-9.-]{1,20}(:[0-9]{1,5})?", fullmatch=True),
    path=st.from_regex(r"(/[A-Za-z0-9._-]{0,10}){0,3}", fullmatch=True),
)
def test_no_url_with_credentials_passes_whatever_its_name(scheme, user, host, path):
    assert benchmark_env(environ={"NCCL_ENDPOINT": f"{scheme}://{user}@{host}{path}"}) == {}


@given(
    host=st.from_regex(r"[a-z0-9.-]{1,20}(:[0-9]{1,5})?", fullmatch=True),
    path=st.from_regex(r"(/[A-Za-z0-9._@-]{0,10}){0,3}", fullmatch=True),
)
def test_a_url_without_a_user_part_passes(host, path):
    assert benchmark_env(environ={"SGLANG_ENDPOINT": f"http://{host}{path}"}) == {
        "SGLANG_ENDPOINT": f"http://{host}{path}"
    }


# A generator for each of `VALUE_SHAPES`, in the form the service issues (lengths and alphabets as
# documented, or as seen): every shape must have one (`test_every_value_shape_has_a_generator`).
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
B64URL = ALNUM + "-_"


def chars(alphabet: str, low: int, high: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=low, max_size=high if high is not None else low)


CREDENTIALS = {
    "a URL with a user part": st.builds(
        "{}://{}:{}@{}/{}".format,
        st.sampled_from(["https", "s3", "postgresql", "redis"]),
        chars(ALNUM, 1, 12),
        chars(ALNUM, 1, 24),
        chars("abcdefgh.", 1, 12),
        chars(ALNUM, 0, 8),
    ),
    "a JSON Web Token": st.builds(
        "eyJ{}.eyJ{}.{}".format, chars(B64URL, 10, 40), chars(B64URL, 10, 80), chars(B64URL, 0, 43)
    ),
    "a PEM block (a private key or certificate)": st.builds(
        lambda kind: "-----BEGIN " + kind + "-----\nMIIE",
        st.sampled_from(["PRIVATE KEY", "RSA PRIVATE KEY", "CERTIFICATE", "OPENSSH PRIVATE KEY"]),
    ),
    "a GitHub token": st.builds("gh{}_{}".format, st.sampled_from("pousr"), chars(ALNUM, 36)),
    "a GitHub fine-grained token": st.builds("github_pat_{}_{}".format, chars(ALNUM, 22), chars(ALNUM, 59)),
    "a Hugging Face token": st.builds("hf_{}".format, chars(ALNUM[:52], 34)),
    "an AWS access key id": st.builds(
        "{}{}".format, st.sampled_from(["AKIA", "ASIA"]), chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    ),
    "a presigned S3 or GCS URL": st.builds(
        "https://{}.s3.amazonaws.com/{}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-{}={}".format,
        chars("abcdefgh", 3, 10),
        chars(ALNUM, 1, 10),
        st.sampled_from(["Credential", "Signature"]),
        chars("0123456789abcdef", 64),
    ),
    "an Azure shared access signature": st.builds(
        "https://{}.blob.core.windows.net/{}?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01&sig={}%3D".format,
        chars("abcdefgh", 3, 10),
        chars(ALNUM, 1, 10),
        chars(ALNUM + "%", 20, 44),
    ),
    "an OpenAI-style API key (sk-...)": st.builds(
        "sk-{}{}".format, st.sampled_from(["", "proj-", "ant-api03-"]), chars(B64URL, 20, 90)
    ),
    "a Slack token": st.one_of(
        st.builds(
            "xox{}-{}-{}".format, st.sampled_from("bpar"), chars("0123456789", 10, 13), chars(ALNUM, 24)
        ),
        st.builds(
            "xapp-1-A{}-{}-{}".format,
            chars(ALNUM[:36], 10),
            chars("0123456789", 13),
            chars("0123456789abcdef", 64),
        ),
    ),
    "a Slack webhook": st.builds(
        "https://hooks.slack.com/services/T{}/B{}/{}".format,
        chars(ALNUM[:26], 8),
        chars(ALNUM[:26], 8),
        chars(ALNUM, 24),
    ),
    "a Google API key": st.builds("AIza{}".format, chars(B64URL, 35)),
    "a Google OAuth access token": st.builds("ya29.{}".format, chars(B64URL, 40, 200)),
    "a Google OAuth client secret": st.builds("GOCSPX-{}".format, chars(B64URL, 28)),
    "a Stripe secret or restricted key": st.builds(
        "{}_{}_{}".format,
        st.sampled_from(["sk", "rk"]),
        st.sampled_from(["live", "test"]),
        chars(ALNUM, 24, 99),
    ),
    "a Stripe webhook signing secret": st.builds("whsec_{}".format, chars(ALNUM, 32)),
    "a GitLab token": st.builds(
        "{}-{}".format,
        st.sampled_from(["glpat", "gldt", "glrt", "glptt", "glsoat", "glft"]),
        chars(B64URL, 20),
    ),
    "an npm token": st.builds("npm_{}".format, chars(ALNUM, 36)),
    "a PyPI token": st.builds("pypi-AgEIcHlwaS5vcmc{}".format, chars(B64URL, 50, 180)),
    "a SendGrid API key": st.builds("SG.{}.{}".format, chars(B64URL, 22), chars(B64URL, 43)),
    "a Docker Hub token": st.builds("dckr_pat_{}".format, chars(B64URL, 27)),
    "a Databricks token": st.builds("dapi{}".format, chars("0123456789abcdef", 32)),
    "a DigitalOcean token": st.builds(
        "do{}_v1_{}".format, st.sampled_from("opr"), chars("0123456789abcdef", 64)
    ),
    "an Azure connection string's key": st.builds(
        "DefaultEndpointsProtocol=https;AccountName={};{}={}".format,
        chars("abcdefgh", 3, 10),
        st.sampled_from(["AccountKey", "SharedAccessKey"]),
        chars(ALNUM + "+/", 40, 88),
    ),
    "a Discord webhook": st.builds(
        "https://{}/api/webhooks/{}/{}".format,
        st.sampled_from(["discord.com", "discordapp.com"]),
        chars("0123456789", 17, 19),
        chars(B64URL, 68),
    ),
    "an HTTP Authorization value": st.one_of(
        st.builds("Bearer {}".format, chars(B64URL + ".", 8, 60)),
        st.builds(
            lambda user, word: "Basic " + base64.b64encode(f"{user}:{word}".encode()).decode(),
            chars(ALNUM, 3, 12),
            chars(ALNUM, 6, 20),
        ),
    ),
}
# What may stand around a credential in a value: nothing, or anything up to a separator.
SEPARATORS = st.sampled_from([" ", "=", ":", ",", ";", "'", '"', "\n", "&", "|", "(", ")"])
AROUND = st.tuples(
    st.one_of(st.just(""), st.tuples(st.text(max_size=12), SEPARATORS).map("".join)),
    st.one_of(st.just(""), st.tuples(SEPARATORS, st.text(max_size=12)).map("".join)),
)


def test_every_value_shape_has_a_generator():
    assert set(CREDENTIALS) == {what for what, _ in VALUE_SHAPES}


@pytest.mark.parametrize("what", sorted(CREDENTIALS))
@given(data=st.data())
def test_a_credential_of_each_shape_is_caught_wherever_it_stands_in_a_value(what, data):
    credential = data.draw(CREDENTIALS[what], label="credential")
    assert secret_shape(credential) == what
    before, after = data.draw(AROUND, label="around")
    value = before + credential + after
    assert secret_value(value)
    # Under a kept prefix and a name that says nothing (SGLANG_GH=ghp_…, VLLM_HF=hf_…): never passed,
    # never recorded.
    environ = {"SGLANG_GH": value, "VLLM_HF": value, "NCCL_ALGO": "Ring"}
    assert benchmark_env(["SGLANG_*"], environ=environ) == {"NCCL_ALGO": "Ring"}
    assert fingerprint.env_vars(environ) == {"NCCL_ALGO": "Ring"}


# Values of the GPU stack's settings: never taken for credentials.
WORD = st.from_regex(r"[A-Za-z][a-z0-9_]{0,15}", fullmatch=True)
SETTINGS = st.one_of(
    st.integers(min_value=-1, max_value=2**40).map(str),
    st.lists(st.integers(0, 15).map(str), min_size=1, max_size=8).map(",".join),  # device lists
    st.lists(
        st.tuples(WORD, st.one_of(WORD, st.sampled_from(["True", "False"]), st.integers(0, 4096).map(str))),
        min_size=1,
        max_size=4,
    ).map(lambda pairs: ",".join(f"{k}:{v}" for k, v in pairs)),  # allocator
    st.lists(
        st.sampled_from(["Ring", "Tree", "NVLS", "NVLSTree", "CollnetDirect", "LL", "LL128", "Simple"]),
        min_size=1,
        max_size=3,
    ).map(",".join),
    st.from_regex(r"\^?(eth|ib|docker|lo|enp)[0-9]{0,2}(,\^?(eth|ib|lo)[0-9]?){0,2}", fullmatch=True),
    st.lists(WORD, min_size=1, max_size=5).map(lambda parts: "/" + "/".join(parts)),  # paths
    st.from_regex(r"[0-9]\.[0-9](\+PTX)?(;[0-9]\.[0-9](\+PTX)?){0,3}", fullmatch=True),  # arch lists
    st.from_regex(
        r"https?://[a-z]{1,10}(\.[a-z]{1,10}){0,2}(:[0-9]{2,5})?(/[a-z0-9_]{1,8}){0,3}", fullmatch=True
    ),
    st.sampled_from(
        [
            "INFO",
            "WARN",
            "TRACE",
            "expandable_segments:True",
            "LAZY",
            "EAGER",
            "FLASHINFER",
            "spawn",
            "basic throughput",
            "token budget",
            "bearer",
            "Basic",
            "sk-1",
            "hf_transfer",
            "AKIA",
            "ghp_",
            "sig",
            "PIX",
            "SYS",
            "NVL",
        ]
    ),
)


@given(value=SETTINGS)
def test_the_gpu_stack_s_settings_are_never_taken_for_credentials(value):
    assert secret_shape(value) is None
    environ = {"PYTORCH_CUDA_ALLOC_CONF": value, "SGLANG_SETTING": value}
    assert benchmark_env(environ=environ) == environ


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("NCCL_ALGO", "Ring"),
        ("CUDA_VISIBLE_DEVICES", "0,1"),
        ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
        ("NCCL_SOCKET_IFNAME", "^docker0,lo"),
        ("TORCH_CUDA_ARCH_LIST", "8.0;9.0+PTX"),
        ("NCCL_DEBUG", "INFO"),
        ("SGLANG_TORCH_PROFILER_DIR", "/tmp/profiles"),
        ("VLLM_ATTENTION_BACKEND", "FLASHINFER"),
    ],
)
def test_the_settings_the_review_named_pass_and_are_recorded_as_they_are(name, value):
    assert benchmark_env(environ={name: value}) == {name: value}
    assert fingerprint.env_vars({name: value}) == {name: value}
