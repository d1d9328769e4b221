"""The rules a per-step map's verdicts give: their ids, and the reason a hot file's path rules keep
the set-up share when the code that changed never runs per step.

`stepmap_scoring` judges changed places with the map; `scoring` only needs to recognise these
rules, so they live apart: scoring a diff without a map loads none of the map's machinery (the
call graph, the map's model), which is most of `perfbot score`'s start-up.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.config.rules import Rule

PER_STEP = "map.per-step"  # on the map
REACHES = "map.reaches"  # called by or decorating a function on the map
READ_BY = "map.read-by"  # a constant or default a function on the map reads
OFF_STEP = "map.off-step"  # known to the base, never runs per step
CATEGORY = "per-step"


def only_off_step(setups: Sequence[tuple[str | None, Rule]]) -> str | None:
    """Why a hot file's path rules keep the set-up share when some of the code that changed never
    runs per step (the rest: set-up code); None when none of it is the map's."""
    off = next((rule for _, rule in setups if rule.id == OFF_STEP), None)
    if off is None:
        return None
    names = list(dict.fromkeys(f"{name}()" if name else "module-level code" for name, _ in setups))
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"only code that does not run per step changed ({shown}): {off.description}"
