"""The environment fingerprint: everything about the machine and checkout that can change a timing.

Each probe is independent and best-effort: a missing tool (no ``nvidia-smi``, no GPU, no torch) leaves
its fields out instead of failing the run. Fields follow what the motivating investigation checked by
hand: GPUs, driver, CUDA, clocks and power, PCIe links, the topology matrix, NCCL/torch/triton/
flashinfer/sgl-kernel versions, ``NCCL_*``/``CUDA_*``/``TORCH_*``/``SGLANG_*`` variables, CPU model and
governor, the git SHA, a dirty tree and the reflog's last entries.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bot.adapters.git_repo import GitRepo

from .environment import benchmark_env, secret_like, secret_value

ENV_PREFIXES = ("NCCL_", "CUDA_", "TORCH_", "SGLANG_", "VLLM_", "NVSHMEM_", "PYTORCH_")
GPU_FIELDS = (
    "index", "name", "uuid", "pci.bus_id", "driver_version", "memory.total", "persistence_mode",
    "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem", "power.draw", "power.limit",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
    "temperature.gpu", "compute_mode",
)
PACKAGES = ("torch", "triton", "flashinfer-python", "flashinfer", "sgl-kernel", "sglang", "vllm",
            "nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime")
REFLOG_ENTRIES = 10
_PROBE_TIMEOUT = 120

# Run in the interpreter the benchmarks use, so the versions are the ones they import.
_PYTHON_PROBE = r"""
import json, sys
from importlib import metadata
out = {"python": sys.version.split()[0], "packages": {}}
for name in sys.argv[1:]:
    try:
        out["packages"][name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
try:
    import torch
    out["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda,
                    "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        out["torch"]["device_count"] = torch.cuda.device_count()
        out["torch"]["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        out["torch"]["cudnn"] = torch.backends.cudnn.version()
        with open("/proc/self/maps") as maps:
            libs = sorted({line.split()[-1] for line in maps if "libnccl" in line})
        if libs:
            out["torch"]["nccl_library"] = libs[0]
except Exception as error:
    out["torch_error"] = f"{type(error).__name__}: {error}"
print(json.dumps(out))
"""


def machine(python: str | None = None) -> dict:
    """What describes the machine and software stack, with absent fields for missing tools."""
    data: dict = {"taken_at": now(), "host": host(), "cpu": cpu(), "env": env_vars()}
    gpus = nvidia_gpus()
    if gpus:
        data["gpus"] = gpus
        data["driver"] = gpus[0].get("driver_version")
    topology = nvidia_topology()
    if topology:
        data["topology"] = topology
    data.update(python_stack(python or sys.executable))
    return data


def clocks() -> dict:
    """The parts that drift during a run (clocks, power, temperature), for the after-rounds snapshot."""
    data: dict = {"taken_at": now()}
    gpus = nvidia_gpus()
    if gpus:
        data["gpus"] = gpus
    return data


def checkout(repo: GitRepo, sha: str) -> dict:
    """The revision benchmarked, and the state of the checkout it came from."""
    data: dict = {"sha": sha}
    head = repo.head_sha()
    if head is not None:
        data["checkout_head"] = head
    if not repo.bare:
        data["dirty"] = repo.is_dirty(untracked_files=True)
    reflog = repo.reflog(REFLOG_ENTRIES)
    if reflog is not None:
        data["reflog"] = reflog
    return data


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def host() -> dict:
    return {"name": platform.node(), "system": platform.system(), "kernel": platform.release(),
            "machine": platform.machine()}


def cpu() -> dict:
    data: dict = {"cores": os.cpu_count()}
    model = cpu_model(read("/proc/cpuinfo"))
    if model:
        data["model"] = model
    governor = read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    if governor:
        data["governor"] = governor.strip()
    return data


def cpu_model(cpuinfo: str | None) -> str | None:
    for line in (cpuinfo or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "Hardware"):
            return value.strip()
    return None


def env_vars(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables that tune the GPU stack, as the benchmarks see them; a secret-looking one never,
    even one that ``bench.pass_env`` names exactly: the results file is read by everyone who can read
    the pull request."""
    source = benchmark_env() if environ is None else environ
    return {key: source[key] for key in sorted(source)
            if key.startswith(ENV_PREFIXES) and not secret_like(key) and not secret_value(source[key])}


def nvidia_gpus() -> list[dict]:
    if shutil.which("nvidia-smi") is None:
        return []
    text = query_gpus(GPU_FIELDS)
    if text is not None:
        return parse_gpu_csv(text, GPU_FIELDS)
    # An older nvidia-smi rejects the whole query for one unknown field: ask field by field.
    columns = [parse_gpu_csv(query_gpus((field,)) or "", (field,)) for field in GPU_FIELDS]
    count = max((len(column) for column in columns), default=0)
    return [{k: v for column in columns if len(column) == count for k, v in column[i].items()}
            for i in range(count)]


def query_gpus(names: tuple[str, ...]) -> str | None:
    return run(["nvidia-smi", f"--query-gpu={','.join(names)}", "--format=csv,noheader,nounits"])


def parse_gpu_csv(text: str, names: tuple[str, ...] = GPU_FIELDS) -> list[dict]:
    """Rows of ``nvidia-smi --query-gpu`` CSV as dicts; ``[N/A]`` and unsupported fields left out."""
    gpus = []
    for line in text.strip().splitlines():
        values = [value.strip() for value in line.split(",")]
        if len(values) != len(names):
            continue
        gpus.append({key: value for key, value in zip(names, values, strict=True)
                     if value and not value.startswith("[") and value != "N/A"})
    return gpus


def nvidia_topology() -> str | None:
    text = run(["nvidia-smi", "topo", "-m"])
    return re.sub(r"\x1b\[[0-9;]*m", "", text).rstrip() if text else None


def python_stack(python: str) -> dict:
    """Versions as ``python`` sees them, asked in the benchmarks' environment from an empty folder:
    ``-c`` puts the working directory first on the path, and the checkout under test could hold a
    ``torch.py``."""
    with tempfile.TemporaryDirectory(prefix="perfbot-probe-") as empty:
        text = run([python, "-c", _PYTHON_PROBE, *PACKAGES], timeout=_PROBE_TIMEOUT, cwd=empty,
                   env=benchmark_env())
    try:
        return json.loads(text.strip().splitlines()[-1]) if text else {}
    except (ValueError, IndexError):
        return {}


def run(argv: list[str], timeout: float = 30, cwd: str | None = None,
        env: dict[str, str] | None = None) -> str | None:
    """Standard output of a command, or None if it is missing, fails or hangs."""
    if shutil.which(argv[0]) is None and not Path(argv[0]).exists():
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              cwd=cwd, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def read(path: str) -> str | None:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return None
