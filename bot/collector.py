"""Python's garbage collector tuned for perfbot's long-running server processes (the web workers
and `perfbot worker`): start-up objects kept out of it, and its young generation collected less often.

A collection of the oldest generation walks every object the process has made since it started
(routes, migrations, rules, the queue's and the database's machinery): in a web worker it stalled
acknowledgements by up to 270 ms, and in a consumer it paused a thread that held a SQLite file's
writer lock, which the intake then waited for (docs/performance.md, "Webhook intake").
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 50, 50)  # young generation every 50,000 allocations, not every 700


def tune_after_start() -> None:
    """Once the process has built what it keeps for its life: move all of it out of the
    collector's reach (`gc.freeze`), and set `THRESHOLDS`."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
