"""The environment of a benchmark's processes: an allow-list of the runner's variables, never its secrets.

A suite runs the code of the revision under test, which on a pull request is the author's. It gets
the variables a GPU program needs (paths, locale, CUDA/NCCL/NVIDIA and engine settings) and those
the config's ``bench.pass_env`` names, and nothing else of the runner's environment: no ``GITHUB_*``
file commands or tokens, no ``ACTIONS_*`` runtime tokens, no credentials. Variables that look like
secrets are dropped even when their prefix is allowed; only a name listed exactly passes one.
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
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|AUTH",
                     re.IGNORECASE)


def secret_like(name: str) -> bool:
    return bool(_SECRET.search(name))


def benchmark_env(passed: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of ``environ`` (default: ours) that a benchmark process may see.

    ``passed``: names, or patterns ending in ``*``, that the config adds to the allow-list. A
    pattern, like a kept prefix, never passes a variable whose name looks like a secret.
    """
    source = os.environ if environ is None else environ
    names = {p for p in passed if not p.endswith("*")}
    patterns = [p for p in passed if p.endswith("*")]
    def allowed(key: str) -> bool:
        if key.startswith(FORBIDDEN_ENV_PREFIXES):
            return False
        if key in names or key in KEPT_NAMES:
            return True
        matched = key.startswith(KEPT_PREFIXES) or any(fnmatch.fnmatchcase(key, p) for p in patterns)
        return matched and not secret_like(key)

    return {key: value for key, value in source.items() if allowed(key)}
