"""The environment of a benchmark's processes: an allow-list of the runner's variables, never its secrets.

A suite runs the code of the revision under test, which on a pull request is the author's. It gets
the variables a GPU program needs (paths, locale, CUDA/NCCL/NVIDIA and engine settings) and those
the config's ``bench.pass_env`` names, and nothing else of the runner's environment: no ``GITHUB_*``
file commands or tokens, no ``ACTIONS_*`` runtime tokens, no credentials. A variable that looks like
a secret, by its name (`secret_like`) or by its value (`secret_value`), is dropped even when its
prefix is allowed; only a name listed exactly in ``bench.pass_env`` passes one. The one runner
variable every process gets is ``RUNNER_TRACKING_ID``: the runner kills, after the job, every
process whose environment carries it, so a benchmark's leftovers cannot outlive the job.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping

from bot.core.config.schema import FORBIDDEN_ENV_PREFIXES

KEPT_NAMES = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR",
                        "LD_LIBRARY_PATH"})
KEPT_PREFIXES = ("LC_", "CUDA_", "NCCL_", "NVIDIA_", "NVSHMEM_", "TORCH_", "PYTORCH_", "SGLANG_", "VLLM_")
# Not a secret: the id by which the Actions runner finds a job's orphaned processes and ends them.
RUNNER_TRACKING = "RUNNER_TRACKING_ID"
# perfbot's own variables that name where it writes (`bot.cli.bench`): never a benchmark's to see.
PRIVATE_NAMES = frozenset({"PERFBOT_BENCH_OUT", "PERFBOT_BENCH_SUMMARY"})

# Words that make a name a secret's wherever they stand in it (``SGLANG_HFTOKEN``, ``DB_PASSWORD1``).
_SECRET_PARTS = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|COOKIE|AUTH|BEARER|APIKEY|API_KEY|PRIVATE_?KEY"
    r"|ACCESS_?KEY|SIGNING_?KEY|SESSION_?KEY|CLIENT_?KEY|SECRET_?KEY|ENCRYPTION_?KEY", re.IGNORECASE)
# Short words that are a secret's only as a whole word of the name (``*_PASS``, ``*_KEY``, ``*_DSN``):
# ``BYPASS``, ``NCCL_IB_PKEY`` or ``COMPASS`` stay.
_SECRET_WORDS = frozenset({"PASS", "PWD", "PW", "KEY", "KEYS", "DSN", "JWT", "JWK", "CREDS", "SIG", "SAS",
                           "OTP", "CERT", "PEM", "P12", "PFX", "KEYTAB", "NETRC", "HTPASSWD"})
# A URL whose authority has a user part (``scheme://user:password@host``, ``https://token@host``).
_URL_WITH_USER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s@]+@")
# A JSON Web Token: three base64url parts, the first two JSON objects (``eyJ`` is ``{"``).
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
# A PEM block: a private key or certificate pasted into a variable.
_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]+-----")


def secret_like(name: str) -> bool:
    """Whether a variable's name says it holds a secret (a token, password, key, DSN, cookie ...)."""
    if _SECRET_PARTS.search(name):
        return True
    return any(word.upper() in _SECRET_WORDS for word in re.split(r"[^A-Za-z0-9]+", name))


def secret_value(value: str) -> bool:
    """Whether a value carries a credential whatever the name: a URL with a user (and password) in
    it, a JSON Web Token, a PEM block."""
    return bool(_URL_WITH_USER.search(value) or _JWT.search(value) or _PEM.search(value))


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
