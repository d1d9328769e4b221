"""Built-in risk profiles: the hot paths of GPU inference engines, as rules with weights.

``generic`` matches by file and function names common to engines (``pynccl*``,
``parallel_state.py``, ``*cuda_graph*``...). ``sglang`` and ``vllm`` add their trees' own
layouts. Weights read as "how likely a change here moves decode latency": communicators and
CUDA-graph capture at the top, schedulers and memory pools as warm paths, docs and tests at zero.
Code that runs once at start-up (constructors, weight loading, argument and config parsing)
counts at half weight; upgrades of the runtime stack (torch, triton, CUDA, NCCL, kernel
libraries) count as high risk on their own.

The rules are plain data (`bot.core.config.rules.Rule`), built at import without validation: the
schema validates a repository's rules when a config file is read, and a test validates every rule
here with it (tests/core/config/test_schema.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.config.rules import Rule, RuleKind, Scope


def _rule(
    id: str,
    kind: RuleKind,
    category: str,
    weight: float,
    description: str,
    paths: Iterable[str] = (),
    pattern: str | None = None,
    scope: Scope = "any",
) -> Rule:
    # A float weight, as the schema makes of a config's: the JSON of a report shows `40.0`.
    return Rule(
        id=id,
        kind=kind,
        category=category,
        weight=float(weight),
        description=description,
        paths=tuple(paths),
        pattern=pattern,
        scope=scope,
    )


def _words(words: str, anywhere: str = "", leading: str = "_?") -> str:
    """A function-name pattern that finds ``words`` as whole words of a name: at its start (after
    ``leading``), or, for ``anywhere``, after any ``_``-separated words; each followed (after a
    plural ``s``) by the end of the name, ``_``, a digit or a capital (``forward_extend``,
    ``_schedule_prefills``, ``forwardBatch``), never by more letters of another word
    (``decoder``, ``sender``, ``sampler``)."""
    after = r"s?(?:[_A-Z0-9]\w*)?"
    start = f"^{leading}(?:{words}){after}$"
    return f"{start}|^\\w*_(?:{anywhere}){after}$" if anywhere else start


_DEPENDENCY_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements*.txt",
    "requirements/**/*.txt",
    "requirements*.in",
    "Dockerfile*",
    "*.Dockerfile",
    "docker/**",
    "CMakeLists.txt",
    "environment*.yml",
    "uv.lock",
)
# Where engines declare their server arguments, configs and environment switches.
_SETTINGS_FILES = (
    "server_args*.py",
    "arg_utils.py",
    "envs.py",
    "environ.py",
    "config.py",
    "*_config.py",
    "**/config/**/*.py",
)
# Where engines pin the libraries every kernel runs on (CMake fetches them too).
_MANIFESTS = (*_DEPENDENCY_FILES, "*.cmake")
_RUNTIME_STACK = (
    r"torch|triton|pytorch-triton\S*|cuda|nvidia/cuda|cuda-toolkit|cuda-python|nccl|"
    r"nvidia-nccl-cu\d+|cudnn|nvidia-cudnn-cu\d+|nvidia-cublas-cu\d+|nvshmem|"
    r"nvidia-nvshmem-cu\d+|flashinfer(?:-python|-cubin|-jit-cache)?|sgl-kernel|sglang-kernel|"
    r"vllm-flash-attn|flash-attn|flash-attention|xformers|deep-gemm|deepgemm|deep-ep|deepep|"
    r"cutlass|nvidia-cutlass-dsl|torchao|cupy-cuda\w*|mooncake-transfer-engine|triton-kernels"
)

GENERIC: tuple[Rule, ...] = (
    # Cold paths: cannot change inference speed.
    _rule(
        "cold.docs",
        "cold",
        "docs",
        0,
        "documentation",
        [
            "docs/**",
            "doc/**",
            "**/docs/**",
            "docs_*/**",
            "*.md",
            "*.mdx",
            "*.rst",
            "LICENSE*",
            "*.ipynb",
            "assets/**",
            "*.png",
            "*.jpg",
            "*.svg",
            "CODEOWNERS",
            ".github/ISSUE_TEMPLATE/**",
        ],
    ),
    _rule(
        "cold.tests",
        "cold",
        "tests",
        0,
        "tests",
        [
            "test/**",
            "tests/**",
            "**/test/**",
            "**/tests/**",
            "test_*.py",
            "*_test.py",
            "conftest.py",
            "*_test.cc",
            "*_test.cu",
        ],
    ),
    _rule(
        "cold.ci",
        "cold",
        "ci",
        0,
        "CI configuration",
        [
            ".github/**",
            ".buildkite/**",
            ".gitlab-ci.yml",
            ".circleci/**",
            ".pre-commit-config.yaml",
            "scripts/ci/**",
            "ci/**",
            ".gitignore",
            ".gitattributes",
            ".clang-format",
            ".codespellrc",
        ],
    ),
    _rule(
        "cold.benchmarks",
        "cold",
        "benchmarks",
        0,
        "benchmark scripts",
        ["benchmark/**", "benchmarks/**", "**/bench_*.py"],
    ),
    _rule("cold.examples", "cold", "examples", 0, "examples", ["examples/**", "example/**"]),
    _rule(
        "cold.diffusion",
        "cold",
        "diffusion",
        0,
        "diffusion / multimodal-generation-only code",
        ["**/diffusion/**", "**/multimodal_gen/**"],
    ),
    # Communication.
    _rule(
        "path.pynccl",
        "path",
        "communicator",
        40,
        "NCCL communicator wrapper",
        ["pynccl*.py", "**/nccl*.py", "*nccl_allocator*"],
    ),
    _rule(
        "path.custom-allreduce",
        "path",
        "communicator",
        40,
        "custom allreduce",
        [
            "*custom_all_reduce*",
            "*custom_allreduce*",
            "*quick_all_reduce*",
            "*all_reduce_utils*",
            "*allreduce*.cu",
            "*allreduce*.cuh",
            "**/allreduce/**",
            "*pymscclpp*",
        ],
    ),
    _rule(
        "path.symmetric-memory",
        "path",
        "communicator",
        35,
        "symmetric memory",
        ["*symm_mem*", "*symmetric_memory*"],
    ),
    _rule(
        "path.communicators",
        "path",
        "communicator",
        30,
        "device communicators",
        ["**/device_communicators/**", "communication_op.py", "**/communicator.py"],
    ),
    _rule(
        "path.parallel-state",
        "path",
        "parallel-state",
        40,
        "parallel state (process groups)",
        ["parallel_state*.py"],
    ),
    # CUDA graphs and compilation.
    _rule(
        "path.cuda-graph",
        "path",
        "cuda-graph",
        35,
        "CUDA graph capture/replay",
        ["*cuda_graph*", "*graph_runner*", "*cudagraph*"],
    ),
    _rule(
        "path.compilation",
        "path",
        "compilation",
        30,
        "compilation / piecewise graphs",
        ["**/compilation/**", "*piecewise*"],
    ),
    # Speculative decoding.
    _rule(
        "path.speculative",
        "path",
        "speculative",
        30,
        "speculative decoding / EAGLE",
        ["**/speculative/**", "**/spec_decode/**", "*eagle*", "*spec_info*", "*medusa*"],
    ),
    # Attention, MoE, kernels.
    _rule(
        "path.attention",
        "path",
        "attention",
        30,
        "attention backend",
        ["**/attention/**", "*attention_backend*", "*flashinfer*", "*flash_attn*", "**/attn/**"],
    ),
    _rule(
        "path.moe",
        "path",
        "moe",
        30,
        "MoE kernels and routing",
        ["**/moe/**", "**/fused_moe*/**", "*fused_moe*", "*_moe.py", "*topk*", "*token_dispatcher*"],
    ),
    _rule(
        "path.moe-configs",
        "path",
        "moe",
        25,
        "tuned MoE kernel configs",
        ["**/fused_moe*/configs/**", "**/moe/**/configs/**"],
    ),
    _rule(
        "path.kernels",
        "path",
        "kernels",
        30,
        "CUDA/C++ kernels",
        ["*.cu", "*.cuh", "**/csrc/**", "**/jit_kernel/**"],
    ),
    _rule(
        "path.layers",
        "path",
        "layers",
        15,
        "model layers (linear, norm, rotary, quantization)",
        [
            "**/layers/linear.py",
            "**/layers/layernorm.py",
            "**/layers/rotary_embedding*",
            "**/layers/quantization/**",
            "**/layers/activation.py",
            "**/layers/logits_processor.py",
        ],
    ),
    # Warm paths.
    _rule(
        "path.model-runner",
        "path",
        "model-runner",
        20,
        "model runner (forward dispatch)",
        ["*model_runner*.py", "forward_batch_info.py", "forward_context.py"],
    ),
    _rule(
        "path.sampling", "path", "sampling", 15, "sampling", ["**/sampling/**", "sampler.py", "**/sample/**"]
    ),
    _rule(
        "path.scheduler",
        "path",
        "scheduler",
        12,
        "scheduler (warm path)",
        ["scheduler*.py", "**/sched/**", "*schedule_batch*", "*schedule_policy*"],
    ),
    _rule(
        "path.memory-pool",
        "path",
        "memory-pool",
        12,
        "KV cache / memory pool (warm path)",
        [
            "**/mem_cache/**",
            "*memory_pool*",
            "*kv_cache*",
            "*block_manager*",
            "*radix_cache*",
            "*allocator*.py",
        ],
    ),
    # The function a hunk changes, by whole words of its name (`_words`): `decode` names
    # `decode_step` and `_decode`, never `get_decoder`; `send` never `sender`.
    _rule(
        "function.collective",
        "function",
        "communicator",
        25,
        "a collective operation",
        pattern=_words(
            r"all_reduce|allreduce|all_gatherv?|allgather|reduce_scatterv?|"
            r"all_to_all|broadcast|send|recv|custom_all_reduce|ncclAllReduce",
            anywhere=r"all_reduce",
            leading="_?",
        ),
    ),
    _rule(
        "function.graph-capture",
        "function",
        "cuda-graph",
        20,
        "CUDA graph capture/replay",
        pattern=_words(
            r"graph_capture|capture|replay|can_run|cuda_graph|capture_one|"
            r"register_graph",
            leading="_?",
        ),
    ),
    _rule(
        "function.speculative",
        "function",
        "speculative",
        20,
        "speculative verify/draft step",
        pattern=_words(
            r"verify|draft|forward_draft|forward_target|propose|eagle|build_tree|"
            r"speculative",
            leading="_?",
        ),
    ),
    _rule(
        "function.forward",
        "function",
        "forward",
        10,
        "a forward pass",
        pattern=_words(
            r"forward|run_batch|execute_model|decode|prefill",
            anywhere=r"forward|run_batch|execute_model|decode|prefill",
        ),
    ),
    _rule(
        "function.sampling",
        "function",
        "sampling",
        10,
        "sampling",
        pattern=_words(r"sample|top_k_top_p|top_p|top_k|min_p", leading="_?"),
    ),
    _rule(
        "function.process-groups",
        "function",
        "parallel-state",
        15,
        "process group set-up",
        pattern=_words(
            r"init_distributed_environment|initialize_model_parallel|"
            r"init_process_group|new_group|init_model_parallel_group|graph_capture",
            leading="",
        ),
    ),
    # Code that runs once, at start-up, unless a function rule above names it.
    _rule(
        "setup.functions",
        "setup",
        "setup",
        50,
        "set-up code (constructors, weight loading, argument and config parsing)",
        pattern=r"^(?:__init__|__post_init__|__new__|__repr__|__str__|__del__|extra_repr|"
        r"_?(?:init|initialize|setup|set_up|load|create|register|warmup|warm_up|"
        r"profile_run|parse|validate|check|configure|from|add_cli|get_supported)"
        r"(?:_\w*)?|\w*_(?:config|configs|args|arguments|weights|options))$",
    ),
    # Risky tokens on added or removed lines.
    _rule(
        "token.host-sync",
        "token",
        "host-sync",
        15,
        "host-device synchronisation (stalls the GPU queue)",
        pattern=r"torch\.cuda\.synchronize\(|\.synchronize\(\)|\.item\(\)|\.cpu\(\)|"
        r"\.tolist\(\)|\.numpy\(\)|non_blocking\s*=\s*False",
    ),
    _rule(
        "token.nccl-env",
        "token",
        "environment",
        25,
        "NCCL environment variable",
        pattern=r"\b(?:TORCH_)?NCCL_[A-Z0-9_]+",
    ),
    _rule(
        "token.cuda-env",
        "token",
        "environment",
        15,
        "CUDA / PyTorch environment variable",
        pattern=r"\b(?:CUDA_DEVICE_MAX_CONNECTIONS|CUDA_LAUNCH_BLOCKING|CUDA_MODULE_LOADING|"
        r"PYTORCH_CUDA_ALLOC_CONF|TORCH_CUDA_ARCH_LIST|CUBLAS_WORKSPACE_CONFIG|"
        r"NVSHMEM_[A-Z0-9_]+)\b",
    ),
    _rule(
        "token.barrier",
        "token",
        "host-sync",
        20,
        "a distributed barrier",
        pattern=r"\b(?:dist|torch\.distributed)\.barrier\(|\.barrier\(\)",
    ),
    _rule(
        "token.object-collective",
        "token",
        "host-sync",
        15,
        "a pickled object collective (host round-trip)",
        pattern=r"\b(?:all_gather_object|broadcast_object_list|gather_object|scatter_object_list)\(",
    ),
    _rule(
        "token.graphs-disabled",
        "token",
        "cuda-graph",
        20,
        "CUDA graphs or compilation disabled",
        pattern=r"\b(?:disable_cuda_graph|enforce_eager|disable_piecewise_cuda_graph)\b|"
        r"torch\.(?:compiler|_dynamo)\.disable|cudagraph_mode\s*=|graph_break\(|"
        r"cuda_graph\w*\s*=\s*False",
    ),
    _rule(
        "config.kernel-default",
        "token",
        "config-default",
        30,
        "a default that selects a kernel, backend or code path (server argument, config, environment)",
        _SETTINGS_FILES,
        pattern=r"\b\w*(?:backend|kernel|impl|runner|algo|algorithm|dispatcher|dtype)\w*\s*"
        r"(?::\s*[^=\n]+)?=\s*[^=\s]|\b(?:enable|disable|use)_\w+\s*:\s*bool\s*=\s*(?:True|False)\b|"
        r"\b(?:SGLANG|VLLM)_\w+\s*(?::[^=\n]+)?=\s*Env\w*\(|"
        r"[\"'](?:SGLANG|VLLM)_\w*(?:USE|ENABLE|DISABLE|BACKEND|KERNEL|IMPL)\w*[\"']\s*:\s*lambda",
    ),
    _rule(
        "token.allocation",
        "token",
        "allocation",
        12,
        "a new allocation or copy in a hot path",
        pattern=r"torch\.(?:empty|zeros|ones|full|rand|randn|tensor|empty_like|zeros_like|"
        r"ones_like|full_like|cat|stack)\(|\.clone\(\)|\.contiguous\(\)|\.copy_\(",
        scope="hot",
    ),
    _rule(
        "token.stream",
        "token",
        "streams",
        10,
        "CUDA stream/event handling in a hot path",
        pattern=r"torch\.cuda\.(?:Stream|Event)\(|wait_stream\(|record_stream\(|wait_event\(",
        scope="hot",
    ),
    _rule(
        "dependency.kernels",
        "token",
        "dependency",
        35,
        "version pin of torch / triton / NCCL / a kernel package",
        _DEPENDENCY_FILES,
        pattern=r"(?im)(?:^|[^\w\n-])(?:torch|triton|nvidia-nccl-cu\d+|nccl|flashinfer(?:[-_]python)?|"
        r"flashinfer[-_]cubin|sgl[-_]kernel|sglang[-_]kernel|vllm[-_]flash[-_]attn|"
        r"flash[-_]attn|xformers|deep[-_]gemm|deep[-_]ep|cutlass|nvidia-cutlass-dsl|"
        r"cuda-python|torchao|mooncake-transfer-engine|cupy-cuda\w*)"
        r"\s*(?:\[[^\]]*\])?\s*(?:==|>=|<=|~=|!=|<|>|@|=)",
    ),
    _rule(
        "dependency.runtime",
        "dependency",
        "dependency",
        60,
        "version change of the runtime stack (torch, triton, CUDA, NCCL, kernel libraries)",
        _MANIFESTS,
        pattern=_RUNTIME_STACK,
    ),
    _rule(
        "dependency.cuda",
        "token",
        "dependency",
        30,
        "CUDA toolkit or base image version",
        _DEPENDENCY_FILES,
        pattern=r"(?i)\bCUDA_VERSION\b|nvidia/cuda:|cuda-toolkit|--index-url\s+\S*/cu\d+|"
        r"GIT_TAG\s",
    ),
)

SGLANG: tuple[Rule, ...] = (
    _rule(
        "sglang.cold",
        "cold",
        "diffusion",
        0,
        "SGLang diffusion / multimodal generation",
        ["python/sglang/multimodal_gen/**", "python/sglang/jit_kernel/diffusion/**"],
    ),
    _rule(
        "sglang.cold-tools",
        "cold",
        "tools",
        0,
        "SGLang tooling outside the serving path",
        [
            "python/sglang/test/**",
            "python/sglang/bench_*.py",
            "python/sglang/benchmark/**",
            "python/sglang/eval/**",
            "python/sglang/lang/**",
            "scripts/**",
            "sgl-model-gateway/**",
            "sgl-router/**",
            "python/sglang/srt/debug_utils/**",
        ],
    ),
    _rule(
        "sglang.distributed",
        "path",
        "communicator",
        25,
        "SGLang distributed runtime",
        [
            "python/sglang/srt/distributed/**",
            "python/sglang/srt/layers/dp_attention.py",
            "python/sglang/srt/layers/communicator*.py",
            "python/sglang/srt/eplb/**",
            "python/sglang/srt/batch_overlap/**",
        ],
    ),
    _rule(
        "sglang.kernels",
        "path",
        "kernels",
        30,
        "sgl-kernel",
        ["sgl-kernel/csrc/**", "sgl-kernel/python/**", "sgl-kernel/include/**"],
    ),
    _rule(
        "sglang.model-executor",
        "path",
        "model-runner",
        20,
        "SGLang model executor",
        ["python/sglang/srt/model_executor/**"],
    ),
)

VLLM: tuple[Rule, ...] = (
    _rule(
        "vllm.distributed", "path", "communicator", 25, "vLLM distributed runtime", ["vllm/distributed/**"]
    ),
    _rule(
        "vllm.worker",
        "path",
        "model-runner",
        20,
        "vLLM worker / model runner",
        ["vllm/worker/**", "vllm/v1/worker/**"],
    ),
    _rule(
        "vllm.kernels",
        "path",
        "kernels",
        30,
        "vLLM custom ops",
        ["csrc/**", "vllm/_custom_ops.py", "vllm/_C*"],
    ),
    _rule(
        "vllm.engine-core",
        "path",
        "scheduler",
        12,
        "vLLM engine core (warm path)",
        ["vllm/v1/engine/core*.py", "vllm/v1/core/**"],
    ),
    _rule(
        "vllm.cold-tools",
        "cold",
        "tools",
        0,
        "vLLM tooling outside the serving path",
        ["vllm/benchmarks/**", "tools/**", "vllm/entrypoints/cli/benchmark/**"],
    ),
)

# Token categories whose signals keep their whole weight in set-up code: a constructor or an
# argument check that picks a kernel or backend decides what every later step runs.
SELECTS_CODE_PATH = frozenset({"config-default"})

PROFILES: dict[str, tuple[Rule, ...]] = {
    "generic": GENERIC,
    "sglang": GENERIC + SGLANG,
    "vllm": GENERIC + VLLM,
}


# Top-level paths that identify an engine's layout.
MARKERS: dict[str, str] = {"python/sglang/": "sglang", "sgl-kernel/": "sglang", "vllm/": "vllm"}


def detect(paths: Iterable[str]) -> str:
    """The built-in profile whose layout the given paths follow."""
    for path in paths:
        for marker, profile in MARKERS.items():
            if path.startswith(marker):
                return profile
    return "generic"
