"""The environment of a benchmark's processes: an allow-list of the runner's variables, never its secrets.

A suite runs the code of the revision under test, which on a pull request is the author's. It gets
the variables a GPU program needs (paths, locale, CUDA/NCCL/NVIDIA and engine settings) and those
the config's ``bench.pass_env`` names, and nothing else of the runner's environment: no ``GITHUB_*``
file commands or tokens, no ``ACTIONS_*`` runtime tokens, no credentials. A variable that looks like
a secret, by its name (`secret_like`) or by its value (`secret_value`: one of the `VALUE_SHAPES`,
anywhere in it), is dropped even when its prefix is allowed; only a name listed exactly in
``bench.pass_env`` passes one. The one runner variable every process gets is
``RUNNER_TRACKING_ID``: the runner kills, after the job, every process whose environment carries
it, so a benchmark's leftovers cannot outlive the job.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping

from bot.core.config.schema import FORBIDDEN_ENV_PREFIXES

KEPT_NAMES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LD_LIBRARY_PATH"}
)
KEPT_PREFIXES = ("LC_", "CUDA_", "NCCL_", "NVIDIA_", "NVSHMEM_", "TORCH_", "PYTORCH_", "SGLANG_", "VLLM_")
# Not a secret: the id by which the Actions runner finds a job's orphaned processes and ends them.
RUNNER_TRACKING = "RUNNER_TRACKING_ID"
# perfbot's own variables that name where it writes (`bot.cli.bench`, `bot.cli.bisect`): never a
# benchmark's to see.
PRIVATE_NAMES = frozenset({"PERFBOT_BENCH_OUT", "PERFBOT_BENCH_SUMMARY", "PERFBOT_BISECT_ARTIFACT"})

# Words that make a name a secret's wherever they stand in it (``SGLANG_HFTOKEN``, ``DB_PASSWORD1``).
_SECRET_PARTS = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|COOKIE|AUTH|BEARER|APIKEY|API_KEY|PRIVATE_?KEY"
    r"|ACCESS_?KEY|SIGNING_?KEY|SESSION_?KEY|CLIENT_?KEY|SECRET_?KEY|ENCRYPTION_?KEY|WEBHOOK",
    re.IGNORECASE,
)
# Short words that are a secret's only as a whole word of the name (``*_PASS``, ``*_KEY``, ``*_DSN``):
# ``BYPASS``, ``NCCL_IB_PKEY`` or ``COMPASS`` stay.
_SECRET_WORDS = frozenset(
    {
        "PASS",
        "PWD",
        "PW",
        "KEY",
        "KEYS",
        "DSN",
        "JWT",
        "JWK",
        "CREDS",
        "SIG",
        "SAS",
        "OTP",
        "CERT",
        "PEM",
        "P12",
        "PFX",
        "KEYTAB",
        "NETRC",
        "HTPASSWD",
    }
)
# What a credential looks like whatever the variable's name, each with what it is: a value that
# holds one anywhere never passes a prefix, and the fingerprint (bot/runner/fingerprint.py) asks
# here too, so this is the one list. Each shape has a test that a generated credential of its
# shape, embedded in a longer value, is caught (tests/runner/test_environment.py). Sources, the
# issuers' own descriptions of their formats: GitHub "About authentication to GitHub" (token
# prefixes); AWS IAM "Unique identifiers" (key id prefixes); Slack "Token types"; Google Cloud "API
# keys" and Google Identity "OAuth 2.0" (ya29. access tokens, GOCSPX- client secrets); Stripe "API
# keys" and "Webhook signatures"; GitLab "Token overview" (prefixes); npm "About access tokens";
# PyPI "API tokens" (macaroons, base64 of their location); SendGrid "API keys"; Docker "Personal
# access tokens"; Databricks "Personal access tokens"; DigitalOcean "Token prefixes"; Azure
# Storage "Configure a connection string"; Discord "Webhook resource"; OpenAI and Anthropic API
# references (sk-…); Hugging Face "User access tokens"; RFC 7519 (JWT), RFC 7468 (PEM), RFC 7617
# and RFC 6750 (Basic and Bearer).
_SHAPES = (
    # ``scheme://user:password@host``, ``https://token@host``
    ("a URL with a user part", r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s@]+@"),
    # three base64url parts, the first two JSON objects (``eyJ`` is ``{"``)
    ("a JSON Web Token", r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
    ("a PEM block (a private key or certificate)", r"-----BEGIN [A-Z0-9 ]+-----"),
    # ghp_ (personal), gho_ (OAuth), ghu_ (user-to-server), ghs_ (server-to-server), ghr_ (refresh)
    ("a GitHub token", r"(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}"),
    ("a GitHub fine-grained token", r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{30,}"),
    ("a Hugging Face token", r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}"),
    (
        "an AWS access key id",
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA"
        r"|A3T[A-Z0-9])[A-Z2-7]{16}(?![A-Z0-9])",
    ),
    (
        "a presigned S3 or GCS URL",
        r"(?i)[?&](?:X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token"
        r"|X-Goog-Signature|X-Goog-Credential)=",
    ),
    ("an Azure shared access signature", r"(?i)[?&]sig=[A-Za-z0-9%+/=]{8,}"),
    ("an OpenAI-style API key (sk-...)", r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}"),
    # xoxb- (bot), xoxp- (user), xoxa-/xoxr- (workspace, refresh), xoxe- (rotating); xapp- (app-level)
    ("a Slack token", r"(?<![A-Za-z0-9])(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}"),
    ("a Slack webhook", r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/"),
    ("a Google API key", r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}"),
    ("a Google OAuth access token", r"(?<![A-Za-z0-9])ya29\.[0-9A-Za-z_-]{20,}"),
    ("a Google OAuth client secret", r"(?<![A-Za-z0-9])GOCSPX-[0-9A-Za-z_-]{20,}"),
    ("a Stripe secret or restricted key", r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_[0-9A-Za-z]{20,}"),
    ("a Stripe webhook signing secret", r"(?<![A-Za-z0-9])whsec_[A-Za-z0-9+/=]{20,}"),
    (
        "a GitLab token",
        r"(?<![A-Za-z0-9])gl(?:pat|dt|rt|ptt|soat|ft|cbt|oas|imt|agent)-[0-9A-Za-z_-]{20,}",
    ),
    ("an npm token", r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}"),
    ("a PyPI token", r"(?<![A-Za-z0-9])pypi-AgE[A-Za-z0-9_-]{50,}"),
    ("a SendGrid API key", r"(?<![A-Za-z0-9])SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    ("a Docker Hub token", r"(?<![A-Za-z0-9])dckr_pat_[A-Za-z0-9_-]{20,}"),
    ("a Databricks token", r"(?<![A-Za-z0-9])dapi[0-9a-f]{32}"),
    ("a DigitalOcean token", r"(?<![A-Za-z0-9])do[opr]_v1_[0-9a-f]{64}"),
    ("an Azure connection string's key", r"(?i)(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{20,}"),
    ("a Discord webhook", r"(?i)discord(?:app)?\.com/api/webhooks/[0-9]+/"),
    # an Authorization header's value: ``Bearer`` and a token, ``Basic`` and base64 (which has a
    # capital, a digit or padding: ``basic throughput`` is prose)
    (
        "an HTTP Authorization value",
        r"(?i:(?<![A-Za-z0-9])bearer)\s+[A-Za-z0-9._~+/-]{8,}"
        r"|(?i:(?<![A-Za-z0-9])basic)\s+(?=[A-Za-z0-9+/]*[A-Z0-9+/=])[A-Za-z0-9+/]{8,}",
    ),
)
VALUE_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((what, re.compile(p)) for what, p in _SHAPES)


def secret_like(name: str) -> bool:
    """Whether a variable's name says it holds a secret (a token, password, key, DSN, cookie ...)."""
    if _SECRET_PARTS.search(name):
        return True
    return any(word.upper() in _SECRET_WORDS for word in re.split(r"[^A-Za-z0-9]+", name))


def secret_shape(value: str) -> str | None:
    """What credential ``value`` holds (one of `VALUE_SHAPES`), or None."""
    return next((what for what, shape in VALUE_SHAPES if shape.search(value)), None)


def secret_value(value: str) -> bool:
    """Whether a value carries a credential whatever the name (`VALUE_SHAPES`)."""
    return secret_shape(value) is not None


def benchmark_env(passed: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of ``environ`` (default: ours) that a benchmark process may see.

    ``passed``: names, or patterns ending in ``*``, that the config adds to the allow-list. A
    pattern, like a kept prefix, never passes a variable that looks like a secret; a name given
    exactly does (the config's author asked for that one).
    """
    source = os.environ if environ is None else environ
    names = {p for p in passed if not p.endswith("*")}
    patterns = [p for p in passed if p.endswith("*")]

    def allowed(key: str, value: str) -> bool:
        if key == RUNNER_TRACKING:
            return True
        if key.startswith(FORBIDDEN_ENV_PREFIXES) or key in PRIVATE_NAMES:
            return False
        if key in names or key in KEPT_NAMES:
            return True
        matched = key.startswith(KEPT_PREFIXES) or any(fnmatch.fnmatchcase(key, p) for p in patterns)
        return matched and not secret_like(key) and not secret_value(value)

    return {key: value for key, value in source.items() if allowed(key, value)}
