"""The environment fingerprint: everything about the machine and checkout that can change a timing.

Each probe is independent and best-effort: a missing tool (no ``nvidia-smi``, no GPU, no torch) leaves
its fields out instead of failing the run. Fields follow what the motivating investigation checked by
hand: GPUs, driver, CUDA, clocks and power, PCIe links, the topology matrix, NCCL/torch/triton/
flashinfer/sgl-kernel versions, ``NCCL_*``/``CUDA_*``/``TORCH_*``/``SGLANG_*`` variables, CPU model and
governor, the git SHA, a dirty tree and the reflog's last entries.

The fingerprint is uploaded with the results, which anyone who can read the pull request can
download. Of the variables, it records the value only of the documented tuning knobs in
`TUNING_VARIABLES`; every other one is recorded as ``sha256:`` and the first 12 hex digits of its
value's SHA-256 (`hashed`), so that a diff still shows that it changed without showing what it is;
a variable that looks like a secret (by name or value) is left out altogether.
"""

from __future__ import annotations

import hashlib
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
# Variables whose value the fingerprint shows as it is: the documented knobs of NCCL (its user
# guide's "Environment Variables"), CUDA (the programming guide's "CUDA Environment Variables"),
# PyTorch (its CUDA and distributed notes) and NVSHMEM, and a few of the engines' backend switches.
# Their values are settings (an algorithm, a count, a device list, a path), never credentials.
TUNING_VARIABLES = frozenset(
    {
        # NCCL
        "NCCL_ALGO",
        "NCCL_PROTO",
        "NCCL_NTHREADS",
        "NCCL_MIN_NCHANNELS",
        "NCCL_MAX_NCHANNELS",
        "NCCL_MIN_CTAS",
        "NCCL_MAX_CTAS",
        "NCCL_CGA_CLUSTER_SIZE",
        "NCCL_BUFFSIZE",
        "NCCL_LL128_BUFFSIZE",
        "NCCL_P2P_DISABLE",
        "NCCL_P2P_LEVEL",
        "NCCL_P2P_USE_CUDA_MEMCPY",
        "NCCL_P2P_NET_CHUNKSIZE",
        "NCCL_P2P_PCI_CHUNKSIZE",
        "NCCL_P2P_NVL_CHUNKSIZE",
        "NCCL_MAX_P2P_NCHANNELS",
        "NCCL_SHM_DISABLE",
        "NCCL_SHM_USE_CUDA_MEMCPY",
        "NCCL_NVLS_ENABLE",
        "NCCL_NVLS_NCHANNELS",
        "NCCL_NVB_DISABLE",
        "NCCL_PXN_DISABLE",
        "NCCL_CUMEM_ENABLE",
        "NCCL_CUMEM_HOST_ENABLE",
        "NCCL_GRAPH_REGISTER",
        "NCCL_LOCAL_REGISTER",
        "NCCL_LAUNCH_MODE",
        "NCCL_COMM_BLOCKING",
        "NCCL_RUNTIME_CONNECT",
        "NCCL_WORK_FIFO_DEPTH",
        "NCCL_CHECKS_DISABLE",
        "NCCL_CROSS_NIC",
        "NCCL_COLLNET_ENABLE",
        "NCCL_MNNVL_ENABLE",
        "NCCL_NET",
        "NCCL_NET_PLUGIN",
        "NCCL_TUNER_PLUGIN",
        "NCCL_NET_GDR_LEVEL",
        "NCCL_NET_GDR_READ",
        "NCCL_NET_GDR_C2C",
        "NCCL_NET_SHARED_BUFFERS",
        "NCCL_NET_SHARED_COMMS",
        "NCCL_IB_DISABLE",
        "NCCL_IB_HCA",
        "NCCL_IB_GID_INDEX",
        "NCCL_IB_TC",
        "NCCL_IB_SL",
        "NCCL_IB_TIMEOUT",
        "NCCL_IB_RETRY_CNT",
        "NCCL_IB_QPS_PER_CONNECTION",
        "NCCL_IB_SPLIT_DATA_ON_QPS",
        "NCCL_IB_PCI_RELAXED_ORDERING",
        "NCCL_IB_ADAPTIVE_ROUTING",
        "NCCL_IB_PKEY",
        "NCCL_SOCKET_IFNAME",
        "NCCL_SOCKET_FAMILY",
        "NCCL_SOCKET_NTHREADS",
        "NCCL_NSOCKS_PERTHREAD",
        "NCCL_IGNORE_CPU_AFFINITY",
        "NCCL_TOPO_FILE",
        "NCCL_GRAPH_FILE",
        "NCCL_DEBUG",
        "NCCL_DEBUG_SUBSYS",
        "NCCL_ASYNC_ERROR_HANDLING",
        "NCCL_BLOCKING_WAIT",
        # CUDA
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "CUDA_LAUNCH_BLOCKING",
        "CUDA_MODULE_LOADING",
        "CUDA_MODULE_DATA_LOADING",
        "CUDA_DEVICE_MAX_CONNECTIONS",
        "CUDA_DEVICE_MAX_COPY_CONNECTIONS",
        "CUDA_SCALE_LAUNCH_QUEUES",
        "CUDA_CACHE_DISABLE",
        "CUDA_CACHE_MAXSIZE",
        "CUDA_CACHE_PATH",
        "CUDA_FORCE_PTX_JIT",
        "CUDA_DISABLE_PTX_JIT",
        "CUDA_FORCE_JIT",
        "CUDA_DISABLE_JIT",
        "CUDA_AUTO_BOOST",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
        "CUDA_HOME",
        "CUDA_PATH",
        # PyTorch
        "PYTORCH_CUDA_ALLOC_CONF",
        "PYTORCH_ALLOC_CONF",
        "PYTORCH_NO_CUDA_MEMORY_CACHING",
        "PYTORCH_NVML_BASED_CUDA_CHECK",
        "PYTORCH_TUNABLEOP_ENABLED",
        "PYTORCH_TUNABLEOP_TUNING",
        "PYTORCH_JIT",
        "TORCH_CUDA_ARCH_LIST",
        "TORCH_NCCL_BLOCKING_WAIT",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING",
        "TORCH_NCCL_AVOID_RECORD_STREAMS",
        "TORCH_NCCL_USE_COMM_NONBLOCKING",
        "TORCH_NCCL_HIGH_PRIORITY",
        "TORCH_NCCL_ENABLE_MONITORING",
        "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
        "TORCH_NCCL_TRACE_BUFFER_SIZE",
        "TORCH_NCCL_DUMP_ON_TIMEOUT",
        "TORCH_NCCL_DESYNC_DEBUG",
        "TORCH_NCCL_NAN_CHECK",
        "TORCH_NCCL_CUDA_EVENT_CACHE",
        "TORCH_DISTRIBUTED_DEBUG",
        "TORCH_CPP_LOG_LEVEL",
        "TORCH_SHOW_CPP_STACKTRACES",
        "TORCH_LOGS",
        "TORCH_COMPILE_DEBUG",
        "TORCH_USE_CUDA_DSA",
        "TORCH_BLAS_PREFER_CUBLASLT",
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST",
        "TORCH_HOME",
        "TORCH_EXTENSIONS_DIR",
        # NVSHMEM
        "NVSHMEM_DISABLE_NVLS",
        "NVSHMEM_SYMMETRIC_SIZE",
        "NVSHMEM_BOOTSTRAP",
        "NVSHMEM_DISABLE_P2P",
        "NVSHMEM_IB_ENABLE_IBGDA",
        "NVSHMEM_REMOTE_TRANSPORT",
        "NVSHMEM_CUMEM_GRANULARITY",
        # the engines' backend switches
        "VLLM_ATTENTION_BACKEND",
        "VLLM_USE_V1",
        "VLLM_WORKER_MULTIPROC_METHOD",
        "VLLM_USE_FLASHINFER_SAMPLER",
        "VLLM_FLASH_ATTN_VERSION",
        "VLLM_USE_DEEP_GEMM",
        "VLLM_ALL2ALL_BACKEND",
        "VLLM_ALLREDUCE_USE_SYMM_MEM",
        "SGLANG_ENABLE_JIT_DEEPGEMM",
        "SGLANG_USE_AITER",
        "SGLANG_TORCH_PROFILER_DIR",
    }
)
HASH_PREFIX = "sha256:"
GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "driver_version",
    "memory.total",
    "persistence_mode",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "clocks.max.mem",
    "power.draw",
    "power.limit",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "temperature.gpu",
    "compute_mode",
)
PACKAGES = (
    "torch",
    "triton",
    "flashinfer-python",
    "flashinfer",
    "sgl-kernel",
    "sglang",
    "vllm",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime",
)
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


def machine(
    python: str | None = None, stacks: dict[str, dict] | None = None, gpus: list[dict] | None = None
) -> dict:
    """What describes the machine and software stack, with absent fields for missing tools.
    ``stacks``: what interpreters answered earlier in this process (`python_stack`, by path), which a
    caller making many runs with one engine (a bisection) keeps, so that it is asked once: the probe
    imports torch, seconds of every run. ``gpus``: `nvidia_gpus` where the caller asked already."""
    data: dict = {"taken_at": now(), "host": host(), "cpu": cpu(), "env": env_vars()}
    gpus = nvidia_gpus() if gpus is None else gpus
    if gpus:
        data["gpus"] = gpus
        data["driver"] = gpus[0].get("driver_version")
    topology = nvidia_topology()
    if topology:
        data["topology"] = topology
    python = python or sys.executable
    if stacks is None:
        data.update(python_stack(python))
    else:
        if python not in stacks:
            stacks[python] = python_stack(python)
        data.update(stacks[python])
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
    return {
        "name": platform.node(),
        "system": platform.system(),
        "kernel": platform.release(),
        "machine": platform.machine(),
    }


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
    """The variables that tune the GPU stack, as the benchmarks see them: the value of a known knob
    (`TUNING_VARIABLES`), `hashed` for any other; a secret-looking one never, even one that
    ``bench.pass_env`` names exactly: the results file is read by everyone who can read the pull
    request."""
    source = benchmark_env() if environ is None else environ
    return {
        key: source[key] if key in TUNING_VARIABLES else hashed(source[key])
        for key in sorted(source)
        if key.startswith(ENV_PREFIXES) and not secret_like(key) and not secret_value(source[key])
    }


def hashed(value: str) -> str:
    """``sha256:`` and the first 12 hex digits of the value's SHA-256: equal values look equal, and
    a changed value shows as changed, without the value."""
    return HASH_PREFIX + hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def nvidia_gpus() -> list[dict]:
    if shutil.which("nvidia-smi") is None:
        return []
    text = query_gpus(GPU_FIELDS)
    if text is not None:
        return parse_gpu_csv(text, GPU_FIELDS)
    # An older nvidia-smi rejects the whole query for one unknown field: ask field by field.
    columns = [parse_gpu_csv(query_gpus((field,)) or "", (field,)) for field in GPU_FIELDS]
    count = max((len(column) for column in columns), default=0)
    return [
        {k: v for column in columns if len(column) == count for k, v in column[i].items()}
        for i in range(count)
    ]


def query_gpus(names: tuple[str, ...]) -> str | None:
    return run(["nvidia-smi", f"--query-gpu={','.join(names)}", "--format=csv,noheader,nounits"])


def parse_gpu_csv(text: str, names: tuple[str, ...] = GPU_FIELDS) -> list[dict]:
    """Rows of ``nvidia-smi --query-gpu`` CSV as dicts; ``[N/A]`` and unsupported fields left out."""
    gpus = []
    for line in text.strip().splitlines():
        values = [value.strip() for value in line.split(",")]
        if len(values) != len(names):
            continue
        gpus.append(
            {
                key: value
                for key, value in zip(names, values, strict=True)
                if value and not value.startswith("[") and value != "N/A"
            }
        )
    return gpus


def nvidia_topology() -> str | None:
    text = run(["nvidia-smi", "topo", "-m"])
    return re.sub(r"\x1b\[[0-9;]*m", "", text).rstrip() if text else None


def python_stack(python: str) -> dict:
    """Versions as ``python`` sees them, asked in the benchmarks' environment from an empty folder:
    ``-c`` puts the working directory first on the path, and the checkout under test could hold a
    ``torch.py``."""
    with tempfile.TemporaryDirectory(prefix="perfbot-probe-") as empty:
        text = run(
            [python, "-c", _PYTHON_PROBE, *PACKAGES], timeout=_PROBE_TIMEOUT, cwd=empty, env=benchmark_env()
        )
    try:
        return json.loads(text.strip().splitlines()[-1]) if text else {}
    except (ValueError, IndexError):
        return {}


def run(
    argv: list[str], timeout: float = 30, cwd: str | None = None, env: dict[str, str] | None = None
) -> str | None:
    """Standard output of a command, or None if it is missing, fails or hangs."""
    if shutil.which(argv[0]) is None and not Path(argv[0]).exists():
        return None
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd, env=env
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def read(path: str) -> str | None:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return None
