"""The `verify-step` kind: perfbot's own EAGLE-3 verify-step benchmark, random weights, tensor
parallel over the visible GPUs (the runner's half, and the benchmark: `bot.runner.suites.verify_step`).

Its verdict is about the EAGLE-3 cycle in the mode the engine runs (`graph`): ``cycle_ms`` (the
headline) and ``tok_s`` are primary, and both carry that mode; the verify pass in each mode, the draft
step and the allreduce are diagnostics that say where a change came from. The plain decode step of
the same model and batch (``decode_ms``), the rate without speculation and the speed-up of
speculation over it are diagnostics too: they say whether speculation still pays
(``speculation_floor``: where the comparison calls it out short of 1).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from . import eagle3
from .base import Metric, MetricDeclaration, MetricRole, SuiteKind, SuiteOptions


class VerifyStepSuite(SuiteOptions):
    """The built-in EAGLE-3 verify-step benchmark (random weights, tensor parallel over visible GPUs)."""

    kind: Literal["verify-step"]
    python: str | None = Field(default=None, description="Interpreter with torch (default: bench.python).")
    preset: Literal["auto", "full", "tiny"] = "auto"
    device: Literal["auto", "cuda", "cpu"] = "auto"
    world_size: Annotated[int, Field(ge=0)] = Field(default=0, description="0: every visible GPU.")
    cpu_world_size: Annotated[int, Field(ge=1)] = Field(
        default=1, description="Ranks (gloo) on a machine without GPUs, when world_size is 0."
    )
    iters: Annotated[int, Field(ge=1)] = Field(default=100, description="Most timed calls per pass.")
    target_se: Annotated[float, Field(ge=0, lt=1)] = Field(
        default=0.001,
        description="Stop timing a pass once the standard error of its median is this "
        "fraction of it (0: always iters calls).",
    )
    verify_modes: list[Literal["full", "piecewise", "eager"]] | None = Field(
        default=None, description="Verify passes to time. Default: only the engine's mode."
    )
    worker: bool = Field(
        default=False,
        description="Serve the warm-ups and the rounds between the first pair and the "
        "pair that completes the minimum from one long-lived process per side "
        "(set up once; each round builds the model and captures its graphs "
        "again).",
    )
    warmup_iters: Annotated[int, Field(ge=0)] = 5
    dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    cuda_graphs: bool = True
    graph: Literal["full", "piecewise", "eager"] | None = Field(
        default=None,
        description="How the engine runs a verify pass, which cycle_ms and tok_s "
        "follow: one CUDA graph (full), graphed pieces with eager "
        "allreduces between them (piecewise), or no graphs (eager). "
        "Default: piecewise, SGLang's default, where CUDA graphs can run; "
        "eager on CPU or with cuda_graphs: false.",
    )
    allreduce: Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")] | None = Field(
        default=None,
        description="MODULE:FUNCTION of the repository under test that every allreduce "
        "goes through (default: torch.distributed.all_reduce).",
    )
    shape: dict[
        Literal[
            "layers",
            "hidden",
            "heads",
            "kv_heads",
            "head_dim",
            "experts",
            "topk",
            "moe_intermediate",
            "context",
            "vocab",
            "batch",
            "num_steps",
            "draft_topk",
            "num_draft_tokens",
        ],
        Annotated[int, Field(ge=1)],
    ] = {}
    accept_length: Annotated[float, Field(ge=1)] | None = None
    speculation_floor: Annotated[float, Field(gt=0, le=100)] | None = Field(
        default=None,
        description="The speed-up of speculation over plain decoding (spec_speedup) "
        "below which the comparison calls it out on a line of its own, as "
        "it does below 1 (for example 1.2: speculation must be 20% faster).",
    )

    @model_validator(mode="after")
    def _graphs_for_the_mode(self) -> VerifyStepSuite:
        if not self.cuda_graphs and self.graph in ("full", "piecewise"):
            raise ValueError(f"graph: {self.graph} needs CUDA graphs, but cuda_graphs is false")
        return self


class VerifyStep(SuiteKind, name="verify-step"):
    options = VerifyStepSuite
    built_in = True
    # In this order, the order in which the speculation explanation names the parts of a cycle.
    metrics = {
        "verify_ms": Metric(
            MetricDeclaration(unit="ms", better="lower"),
            MetricRole(
                "the EAGLE-3 verify step",
                "time",
                "target-model verify pass of one cycle (allreduce-bound under TP)",
                part="cycle_part",
            ),
            retired=True,
        ),
        "verify_graph_ms": Metric(
            MetricDeclaration(unit="ms", better="lower", role="diagnostic", mode="full"),
            MetricRole(
                "the EAGLE-3 verify step (CUDA graph)",
                "time",
                "verify pass replayed as one CUDA graph",
                part="cycle_part",
            ),
        ),
        "verify_piecewise_ms": Metric(
            MetricDeclaration(unit="ms", better="lower", role="diagnostic", mode="piecewise"),
            MetricRole(
                "the EAGLE-3 verify step (piecewise CUDA graph)",
                "time",
                "verify pass as graphed pieces with eager allreduces between",
                part="cycle_part",
            ),
        ),
        "verify_eager_ms": Metric(
            MetricDeclaration(unit="ms", better="lower", role="diagnostic", mode="eager"),
            MetricRole(
                "the EAGLE-3 verify step (eager)",
                "time",
                "verify pass without CUDA graphs",
                part="cycle_part",
            ),
        ),
        "draft_ms": Metric(
            MetricDeclaration(unit="ms", better="lower", role="diagnostic"),
            MetricRole(
                "the EAGLE-3 draft steps", "time", "the draft head's steps of one cycle", part="cycle_part"
            ),
        ),
        "cycle_ms": Metric(MetricDeclaration(unit="ms", better="lower", role="headline"), eagle3.CYCLE),
        "tok_s": Metric(
            MetricDeclaration(unit="tok/s", better="higher", role="primary"),
            MetricRole(
                "EAGLE-3 decoding",
                "rate",
                "tokens per second for the configured accept length (verify-step suite)",
            ),
        ),
        "decode_ms": Metric(
            MetricDeclaration(unit="ms", better="lower", role="diagnostic"),
            MetricRole(
                "the plain decode step",
                "time",
                "one decode step of the same model and batch without speculation (one token per sequence)",
            ),
        ),
        "baseline_tok_s": Metric(
            MetricDeclaration(unit="tok/s", better="higher", role="diagnostic"), eagle3.PLAIN_RATE
        ),
        "spec_speedup": Metric(
            MetricDeclaration(unit="x", better="higher", role="diagnostic"), eagle3.SPEEDUP
        ),
        "allreduce_us": Metric(
            MetricDeclaration(unit="us", better="lower", role="diagnostic"),
            MetricRole("the allreduce", "time", "one tensor-parallel allreduce call", part="communication"),
            retired=True,
        ),
        "allreduce_verify_us": Metric(
            MetricDeclaration(unit="us", better="lower", role="diagnostic"),
            MetricRole(
                "the verify-sized allreduce",
                "time",
                "one allreduce of a verify step's activations",
                part="communication",
            ),
        ),
        "allreduce_draft_us": Metric(
            MetricDeclaration(unit="us", better="lower", role="diagnostic"),
            MetricRole(
                "the draft-sized allreduce",
                "time",
                "one allreduce of a draft step's activations",
                part="communication",
            ),
        ),
    }
