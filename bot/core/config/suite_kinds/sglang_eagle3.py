"""The `sglang-eagle3` kind: SGLang's ``bench_one_batch_server`` with EAGLE-3 and without
speculation (the runner's half, and how each metric is derived: `bot.runner.suites.sglang_eagle3`).

The verdict's headline is the engine's own measured cycle; the accept length (what a cycle yields)
and the speed without speculation are primary too; the speculative tokens/s and speedup follow from
those three, and the time to first token is a diagnostic.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from . import eagle3
from .base import Metric, MetricDeclaration, MetricRole, SuiteKind, SuiteOptions


class SglangEagle3Suite(SuiteOptions):
    """SGLang's ``bench_one_batch_server``, with EAGLE-3 and without speculation, in every round."""

    kind: Literal["sglang-eagle3"]
    python: str | None = None
    model_path: Annotated[str, Field(min_length=1)]
    draft_model_path: Annotated[str, Field(min_length=1)]
    tp_size: Annotated[int, Field(ge=1)] = 1
    num_steps: Annotated[int, Field(ge=1)] = 3
    eagle_topk: Annotated[int, Field(ge=1)] = 1
    num_draft_tokens: Annotated[int, Field(ge=1)] = 4
    batch_size: Annotated[int, Field(ge=1)] = 1
    input_len: Annotated[int, Field(ge=1)] = 1024
    output_len: Annotated[int, Field(ge=1)] = 256
    extra_args: list[str] = Field(default=[], description="More server/benchmark arguments, for both runs.")


class SglangEagle3(SuiteKind, name="sglang-eagle3"):
    options = SglangEagle3Suite
    built_in = True  # known by name; it runs once the config names the model and the draft model
    metrics = {
        "spec_tok_s": Metric(
            MetricDeclaration(unit="tok/s", better="higher", role="diagnostic"),
            MetricRole(
                "EAGLE-3 decoding",
                "rate",
                "tokens per second per request with speculation on",
                part="speculative_rate",
            ),
        ),
        "baseline_tok_s": Metric(
            MetricDeclaration(unit="tok/s", better="higher", role="primary"), eagle3.PLAIN_RATE
        ),
        "accept_length": Metric(
            MetricDeclaration(unit="tokens", better="higher", role="primary"),
            MetricRole(
                "the EAGLE-3 accept length",
                "count",
                "tokens gained per draft+verify cycle (1 + accepted drafts)",
                part="accept_length",
            ),
        ),
        "cycle_ms": Metric(MetricDeclaration(unit="ms", better="lower", role="headline"), eagle3.CYCLE),
        "spec_speedup": Metric(
            MetricDeclaration(unit="x", better="higher", role="diagnostic"), eagle3.SPEEDUP
        ),
        "ttft_ms": Metric(
            MetricDeclaration(unit="ms", better="lower", role="diagnostic"),
            MetricRole("time to first token", "time", "prefill latency of a request"),
        ),
        "baseline_ttft_ms": Metric(
            MetricDeclaration(unit="ms", better="lower", role="diagnostic"),
            MetricRole(
                "time to first token without speculation", "time", "prefill latency with speculation off"
            ),
        ),
    }
