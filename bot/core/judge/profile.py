"""Kernel profiles and their diff: what the GPU (or, on CPU, the operators) did per step on each side,
and what changed between base and head.

A `Profile` is the optional ``profile`` of one side of a results file: one un-timed profiled pass
(PyTorch's profiler over CUPTI, or an engine's own Kineto trace, `kineto.profile_of`), aggregated per
kernel name into calls per step and microseconds per step, each kernel in a `FAMILIES` family, plus
``idle_us``: the time per step the GPU sat idle between its first and last kernel of the step,
waiting for the host (what a ``synchronize()`` creates). Host synchronisations themselves are rows
of the ``sync`` family (their time is how long the host blocked).

`diff` says what changed: kernels that appeared or vanished, call counts that changed per step,
and the families (and host gaps) whose time moved. A profile is one pass, not a statistic: counts
are exact, times are read with a margin (`MIN_SHARE` of the step and `MIN_RELATIVE` of the
family's own time) so that an A/A pair reports no change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.core.stepmap import is_repository_path
from bot.core.text import printable

Family = Literal["communication", "gemm", "attention", "elementwise", "memset", "reduction", "sync", "other"]
FAMILIES: tuple[Family, ...] = (
    "communication",
    "gemm",
    "attention",
    "elementwise",
    "memset",
    "reduction",
    "sync",
    "other",
)
FAMILY_LABELS: dict[Family, str] = {
    "communication": "NCCL / communication",
    "gemm": "GEMM",
    "attention": "attention",
    "elementwise": "elementwise / copy",
    "memset": "memset / fill",
    "reduction": "reduction",
    "sync": "host synchronisation",
    "other": "other",
}
MAX_KERNELS = 500
MAX_NAME = 500
MAX_SITES = 3  # launching lines kept per kernel
MIN_CALLS = 0.5  # per step: a count that moved by less is the same count
MIN_SHARE = 0.01  # a family's time moved only by at least this share of the base step ...
MIN_RELATIVE = 0.10  # ... and by at least this share of its own base time

# Host calls that block until the device has drained (CUDA runtime and driver API names).
SYNC_CALLS = frozenset(
    (
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuEventSynchronize",
    )
)

# By name, first match wins: communication and attention kernels carry GEMM-like words (cutlass).
# Host synchronisations are not classified by name: the trace reader knows them (`SYNC_CALLS`).
_RULES: tuple[tuple[Family, re.Pattern[str]], ...] = (
    (
        "communication",
        re.compile(
            r"nccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|"
            r"broadcast|sendrecv|gloo|c10d::|cross_device_reduce|"
            r"one_?shot|two_?shot|custom_?ar|record_param_comms",
            re.I,
        ),
    ),
    (
        "memset",
        re.compile(
            r"memset|fillfunctor|fill_kernel|aten::(fill_|zero_|zeros|zeros_like|"
            r"new_zeros)\b",
            re.I,
        ),
    ),
    (
        "attention",
        re.compile(
            r"flash|fmha|attention|attn|sdpa|mha_|mla_|batchdecode|batchprefill|"
            r"paged_?kv",
            re.I,
        ),
    ),
    (
        "gemm",
        re.compile(
            r"gemm|nvjet|cublas|cutlass|xmma|wgmma|splitk|aten::(mm|bmm|addmm|matmul|"
            r"linear|einsum|baddbmm)\b|_moe_|moe_",
            re.I,
        ),
    ),
    (
        "reduction",
        re.compile(
            r"reduce|softmax|norm|topk|sort|argmax|argmin|aten::(sum|mean|max|min|"
            r"prod|cumsum)\b|scan",
            re.I,
        ),
    ),
    (
        "elementwise",
        re.compile(
            r"elementwise|copy|memcpy|cat_?array|catarray|index|gather|scatter|"
            r"silu|gelu|act_and_mul|rotary|rope|aten::(add|mul|sub|div|cat|clone|"
            r"contiguous|to|_to_copy|neg|exp|rsqrt|pow|where|repeat_interleave|"
            r"transpose|view|reshape)",
            re.I,
        ),
    ),
)


def classify(name: str, category: str = "") -> Family:
    """The family of a kernel (or, on CPU, an operator) from its name and trace category."""
    if category == "gpu_memset":
        return "memset"
    if category == "gpu_memcpy":
        return "elementwise"
    for family, pattern in _RULES:
        if pattern.search(name):
            return family
    return "other"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


PerStep = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class LaunchSite(_Model):
    """A line of the repository under test that launched a kernel: the innermost frame of that
    repository on the host's stack when it was launched (path relative to the repository, the line,
    the function's qualified name), and how many of the kernel's calls per step it made."""

    path: Annotated[str, Field(min_length=1, max_length=400)]
    line: Annotated[int, Field(ge=0, le=10_000_000, strict=True)]
    function: Annotated[str, Field(min_length=1, max_length=300)]
    calls: PerStep

    @field_validator("path")
    @classmethod
    def _repository_path(cls, value: str) -> str:
        if not is_repository_path(value):
            raise ValueError("must be a path relative to the repository, outside installed packages")
        return value

    @field_validator("function")
    @classmethod
    def _printable(cls, value: str) -> str:
        if printable(value) != value:
            raise ValueError("holds control or invisible characters")
        return value

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


class KernelStat(_Model):
    """One kernel name of a profile: its family, calls per step and microseconds per step; and, where
    the profiled pass recorded Python stacks, the lines of the repository that launched it (at most
    `MAX_SITES`, the most calls first), left out of a file when unknown."""

    name: Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
    family: Family
    calls: PerStep
    us: PerStep
    sites: Annotated[
        list[LaunchSite] | None, Field(max_length=MAX_SITES, exclude_if=lambda value: value is None)
    ] = None


class Profile(_Model):
    """One side's profiled pass; ``what`` names the step, ``steps`` how many were profiled."""

    source: Annotated[str, Field(max_length=200)]
    device: Literal["cuda", "cpu"]
    what: Annotated[str, Field(max_length=200)] = "step"
    steps: Annotated[int, Field(ge=1, le=1_000_000)]
    step_us: PerStep
    idle_us: PerStep | None = None
    kernels: Annotated[list[KernelStat], Field(max_length=MAX_KERNELS + len(FAMILIES))]

    def span_us(self) -> float:
        """How long a step took: the host's window of it (``step_us``, its launches: the device may run
        behind) or, where longer, the device's busy and idle time in it."""
        busy = sum(k.us for k in self.kernels if k.family != "sync")
        return max(self.step_us, busy + (self.idle_us or 0.0))

    def family_us(self) -> dict[Family, float]:
        """Microseconds per step of each family (device families; ``sync`` is host time)."""
        totals: dict[Family, float] = dict.fromkeys(FAMILIES, 0.0)
        for kernel in self.kernels:
            totals[kernel.family] += kernel.us
        return totals


def aggregate(events: Iterable[tuple[str, Family, float]], steps: int) -> list[KernelStat]:
    """Per-step rows from ``(name, family, microseconds)`` events of ``steps`` steps, longest first;
    beyond `MAX_KERNELS` names the rest are folded into one row per family."""
    calls: dict[tuple[str, Family], int] = {}
    time: dict[tuple[str, Family], float] = {}
    for name, family, us in events:
        key = (name[:MAX_NAME] or "(unnamed)", family)
        calls[key] = calls.get(key, 0) + 1
        time[key] = time.get(key, 0.0) + max(us, 0.0)
    ordered = sorted(calls, key=lambda k: (-time[k], k))
    rows = [
        KernelStat(name=n, family=f, calls=calls[(n, f)] / steps, us=time[(n, f)] / steps)
        for n, f in ordered[:MAX_KERNELS]
    ]
    folded: dict[Family, tuple[int, float]] = {}
    for key in ordered[MAX_KERNELS:]:
        count, total = folded.get(key[1], (0, 0.0))
        folded[key[1]] = (count + calls[key], total + time[key])
    rows += [
        KernelStat(name=f"(other {FAMILY_LABELS[f]} kernels)", family=f, calls=c / steps, us=t / steps)
        for f, (c, t) in folded.items()
    ]
    return rows


# ---------------------------------------------------------------- the diff

Change = Literal["appeared", "vanished", "calls"]


@dataclass(frozen=True)
class KernelChange:
    """A kernel that appeared, vanished, or kept its name and changed its calls per step."""

    name: str
    family: Family
    change: Change
    base_calls: float
    head_calls: float
    base_us: float
    head_us: float
    sites: tuple[LaunchSite, ...] = ()

    @property
    def side(self) -> Literal["base", "head"]:
        """Whose launching lines `sites` are: the base's for a kernel that vanished, else the head's."""
        return "base" if self.change == "vanished" else "head"


@dataclass(frozen=True)
class FamilyTime:
    """A family's microseconds per step on each side, and whether that moved beyond the margin."""

    family: Family
    base_us: float
    head_us: float
    moved: bool

    @property
    def label(self) -> str:
        return FAMILY_LABELS[self.family]


@dataclass(frozen=True)
class ProfileDiff:
    """What changed between the profiles of base and head."""

    base: Profile
    head: Profile
    kernels: tuple[KernelChange, ...]
    families: tuple[FamilyTime, ...]
    idle: FamilyTime | None
    notes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        moved = any(f.moved for f in self.families) or bool(self.idle and self.idle.moved)
        return bool(self.kernels) or moved

    def count(self, change: Change) -> int:
        return sum(1 for k in self.kernels if k.change == change)

    def to_dict(self) -> dict[str, object]:
        """The JSON of `perfbot compare` (``kernels``)."""
        return {
            "changed": self.changed,
            "what": self.head.what,
            "device": self.head.device,
            "steps": {"base": self.base.steps, "head": self.head.steps},
            "step_us": {"base": self.base.span_us(), "head": self.head.span_us()},
            "idle_us": None
            if self.idle is None
            else {"base": self.idle.base_us, "head": self.idle.head_us, "moved": self.idle.moved},
            "families": [
                {"family": f.family, "base_us": f.base_us, "head_us": f.head_us, "moved": f.moved}
                for f in self.families
            ],
            "kernels": [
                {
                    "name": k.name,
                    "family": k.family,
                    "change": k.change,
                    "base_calls": k.base_calls,
                    "head_calls": k.head_calls,
                    "base_us": k.base_us,
                    "head_us": k.head_us,
                    "launched_by": [{"side": k.side, **s.model_dump()} for s in k.sites],
                }
                for k in self.kernels
            ],
            "notes": list(self.notes),
        }


def diff(base: Profile, head: Profile) -> ProfileDiff:
    """Kernels appeared, vanished or called a different number of times per step, and the family
    times (and host gaps) that moved by at least `MIN_SHARE` of the step and `MIN_RELATIVE` of
    their own time."""
    notes = []
    if (base.device, base.what) != (head.device, head.what):
        notes.append(
            f"the two sides profiled different things ({base.device} {base.what!r} against "
            f"{head.device} {head.what!r}): read the kernels with care"
        )
    step = max(base.span_us(), 1e-9)
    base_rows = {(k.name, k.family): k for k in base.kernels}
    head_rows = {(k.name, k.family): k for k in head.kernels}
    changes = []
    for key in [*base_rows, *(k for k in head_rows if k not in base_rows)]:
        was, now = base_rows.get(key), head_rows.get(key)
        b_calls, h_calls = (was.calls if was else 0.0), (now.calls if now else 0.0)
        if abs(h_calls - b_calls) < MIN_CALLS:
            continue
        change: Change = "calls"
        if b_calls < MIN_CALLS:
            change = "appeared"
        elif h_calls < MIN_CALLS:
            change = "vanished"
        launcher = was if change == "vanished" else now
        sites = tuple(launcher.sites or ()) if launcher else ()
        changes.append(
            KernelChange(
                key[0],
                key[1],
                change,
                b_calls,
                h_calls,
                was.us if was else 0.0,
                now.us if now else 0.0,
                sites,
            )
        )
    changes.sort(key=lambda c: (-abs(c.head_us - c.base_us), c.name))
    base_families, head_families = base.family_us(), head.family_us()
    families = tuple(
        FamilyTime(f, base_families[f], head_families[f], _moved(base_families[f], head_families[f], step))
        for f in FAMILIES
        if base_families[f] or head_families[f]
    )
    idle = None
    if base.idle_us is not None and head.idle_us is not None:
        idle = FamilyTime("other", base.idle_us, head.idle_us, _moved(base.idle_us, head.idle_us, step))
    return ProfileDiff(base, head, tuple(changes), families, idle, tuple(notes))


def diff_of(base: Profile | None, head: Profile | None) -> ProfileDiff | None:
    """`diff` of two sides' profiles, or None unless both sides were profiled."""
    return diff(base, head) if base is not None and head is not None else None


def _moved(base_us: float, head_us: float, step_us: float) -> bool:
    delta = abs(head_us - base_us)
    return delta >= MIN_SHARE * step_us and delta >= MIN_RELATIVE * max(base_us, 1e-9)


def short_name(name: str, limit: int = 90) -> str:
    """A kernel name fit for a table: no return type, no parameter list, template arguments cut
    where the name is long."""
    text = re.sub(r"^void\s+", "", name.strip())
    if text.endswith(")") and "(" in text:
        depth = 0
        for position in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[position], 0)
            if depth == 0:
                text = text[:position].rstrip() or text
                break
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summary(d: ProfileDiff) -> str:
    """One line: what changed, or that nothing did."""
    if not d.changed:
        return "no kernel appeared or vanished, no call count changed, no family's time moved"
    counts = (
        (d.count("appeared"), "appeared"),
        (d.count("vanished"), "vanished"),
        (d.count("calls"), "changed calls per step"),
    )
    parts = [f"{n} {word}" for n, word in counts if n]
    moved = [f for f in d.families if f.moved]
    parts += [f"{f.label} {_signed_ms(f.head_us - f.base_us)} per step" for f in _by_size(moved)[:3]]
    if d.idle is not None and d.idle.moved:
        parts.append(f"host gaps {_signed_ms(d.idle.head_us - d.idle.base_us)} per step")
    return "; ".join(parts)


def _by_size(families: Sequence[FamilyTime]) -> list[FamilyTime]:
    return sorted(families, key=lambda f: -abs(f.head_us - f.base_us))


def _signed_ms(us: float) -> str:
    if abs(us) >= 1000:
        return f"{us / 1000:+.2f} ms"
    return f"{us:+.0f} µs" if abs(us) >= 10 else f"{us:+.1f} µs"
