"""Environment (fingerprint) differences between base and head, ranked by how likely they move metrics.

A fingerprint is a nested JSON object; keys are flattened with dots (``gpu.0.clocks.max_sm_mhz``).
Each flattened key falls in the first category of `CATEGORIES` whose pattern matches it; the
category's rank orders the diff (clocks and power first, then NCCL, driver/CUDA, torch and kernel
libraries, GPU and topology, other runtime environment variables, CPU/OS, the rest).

Two kinds of keys never make the environment "different":
- code identity (git sha, dirty flag, reflog, timestamps, the engine's own version string): base
  and head differ there by design;
- live readings (current clocks, power draw, temperature, utilisation, memory in use, the current
  PCIe link): they move from one sample to the next; they are listed only when they differ by more
  than `READING_TOLERANCE`, and never gate a verdict on their own.

`drift` compares one side's fingerprint with its ``after`` snapshot (taken when the rounds ended):
a power limit or locked clock that changed mid-run is as material as one that differs by side.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.core.text import clip

READING_TOLERANCE = 0.10
MAX_VALUE_CHARS = 200


@dataclass(frozen=True, slots=True)
class Category:
    name: str
    pattern: re.Pattern[str]


def _category(name: str, pattern: str) -> Category:
    return Category(name, re.compile(pattern, re.IGNORECASE))


CATEGORIES: tuple[Category, ...] = (
    _category("clocks", r"clock|mhz|freq"),
    _category("power", r"power|watt|pstate|throttl|persistence"),
    _category("nccl", r"nccl"),
    _category("driver and CUDA", r"driver|cuda|cudnn|cublas|nvcc"),
    _category(
        "torch and kernel libraries",
        r"torch|triton|flashinfer|sgl.?kernel|deep.?gemm|cutlass|xformers|flash.?attn",
    ),
    _category("GPU and topology", r"gpu|topo|pcie|nvlink|link|mig|ecc|numa|p2p|sku|bus"),
    _category("runtime environment", r"(^|\.)(env|environ)\.|(^|\.)(sglang|vllm|nvshmem|omp|mkl)_"),
    _category("CPU and OS", r"cpu|governor|kernel|(^|\.)os(\.|$)|python|host|machine|numa"),
    _category("other", r""),
)

_IDENTITY = re.compile(
    r"(^|\.)(sha|commit|git|git_sha|checkout_head|dirty|reflog|branch|ref|timestamp|taken_at|time|"
    r"date|started_at|finished_at|pid|uptime_s|uptime)(\.|$)"
    r"|(^|\.)(sglang|vllm)[._-]?(version|__version__)$|(^|\.)packages\.(sglang|vllm)$",
    re.IGNORECASE,
)
_READING = re.compile(
    r"temp|utili[sz]ation|(^|\.)util|memory[._](used|free)|fan|power[._](draw|usage)"
    r"|clocks?[._](sm|mem|memory|gr|graphics|video)(_mhz)?$|(sm|mem|graphics)[._]clocks?(_mhz)?$"
    r"|[._]current$",
    re.IGNORECASE,
)
_SETTING = re.compile(r"max|limit|app|lock|default|enforced|target", re.IGNORECASE)
AFTER_KEYS = ("after", "end")


@dataclass(frozen=True, slots=True)
class EnvDifference:
    """One fingerprint key whose value differs; ``None`` means absent on that side."""

    key: str
    base: str | None
    head: str | None
    category: str
    rank: int
    material: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "base": self.base,
            "head": self.head,
            "category": self.category,
            "material": self.material,
        }


def flatten(fingerprint: Mapping[str, Any] | list[Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects and lists become dotted keys (``gpus.0.clocks.sm``); scalars stay values."""
    items = fingerprint.items() if isinstance(fingerprint, Mapping) else enumerate(fingerprint)
    flat: dict[str, Any] = {}
    for key, value in items:
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping | list) and value:
            flat.update(flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def diff(base: Mapping[str, Any], head: Mapping[str, Any], ignore: Iterable[str] = ()) -> list[EnvDifference]:
    """Keys whose values differ between two fingerprints, most likely to move metrics first.

    ``ignore``: glob patterns of flattened keys to list but never count as material (for
    example a dependency pin that the change under test bumps on purpose).
    """
    return _compare(flatten(_without_after(base)), flatten(_without_after(head)), tuple(ignore))


def drift(fingerprint: Mapping[str, Any], ignore: Iterable[str] = ()) -> list[EnvDifference]:
    """What changed during one side's run: the fingerprint against its ``after`` (or ``end``)
    snapshot, on the keys that snapshot has; ``base`` is the value before, ``head`` after."""
    after = next((fingerprint[k] for k in AFTER_KEYS if isinstance(fingerprint.get(k), Mapping)), None)
    if after is None:
        return []
    flat_after = flatten(after)
    flat_before = {k: v for k, v in flatten(_without_after(fingerprint)).items() if k in flat_after}
    return _compare(flat_before, flat_after, tuple(ignore))


def _without_after(fingerprint: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fingerprint.items() if k not in AFTER_KEYS}


def _compare(
    flat_base: dict[str, Any], flat_head: dict[str, Any], ignored: tuple[str, ...]
) -> list[EnvDifference]:
    found = []
    for key in sorted(flat_base.keys() | flat_head.keys()):
        if _IDENTITY.search(key):
            continue
        old, new = flat_base.get(key), flat_head.get(key)
        if _same(old, new):
            continue
        reading = _is_reading(key)
        if reading and _close(old, new):
            continue
        rank, category = categorise(key)
        material = not reading and not any(fnmatch.fnmatchcase(key, p) for p in ignored)
        found.append(
            EnvDifference(
                key, _shown(old, key in flat_base), _shown(new, key in flat_head), category, rank, material
            )
        )
    found.sort(key=lambda d: (not d.material, d.rank, d.key))
    return found


def categorise(key: str) -> tuple[int, str]:
    """(rank, category name) of a flattened key; rank 0 is the most likely to move metrics."""
    for rank, category in enumerate(CATEGORIES):
        if category.pattern.search(key):
            return rank, category.name
    return len(CATEGORIES) - 1, CATEGORIES[-1].name


def differs(differences: Iterable[EnvDifference]) -> bool:
    """Whether base and head ran in materially different environments."""
    return any(d.material for d in differences)


def _is_reading(key: str) -> bool:
    last = key.rsplit(".", 1)[-1]
    return bool(_READING.search(key)) and not _SETTING.search(last)


def _same(old: Any, new: Any) -> bool:
    if _canonical(old) == _canonical(new):
        return True
    as_numbers = [_as_number(v) if _FULL_NUMBER.match(str(v)) else None for v in (old, new)]
    return None not in as_numbers and as_numbers[0] == as_numbers[1]


def _close(old: Any, new: Any) -> bool:
    before, after = _as_number(old), _as_number(new)
    if before is None or after is None:
        return False
    scale = max(abs(before), abs(after))
    return scale == 0 or abs(before - after) / scale <= READING_TOLERANCE


def _as_number(value: Any) -> float | None:
    """Numbers, and numbers written as text (nvidia-smi's CSV gives "1980", "450.23 W")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        match = _LEADING_NUMBER.match(value)
        value = match[0] if match else None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


_LEADING_NUMBER = re.compile(r"^\s*[-+]?\d+(\.\d+)?")
_FULL_NUMBER = re.compile(r"^\s*[-+]?\d+(\.\d+)?\s*$")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _shown(value: Any, present: bool) -> str | None:
    if not present:
        return None
    text = value if isinstance(value, str) else _canonical(value)
    return clip(text, MAX_VALUE_CHARS + 1)  # the value's first MAX_VALUE_CHARS, then the ellipsis
