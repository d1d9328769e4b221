"""`bot.collector`: the tuning of Python's garbage collector in perfbot's server processes."""

from __future__ import annotations

import gc

from bot import collector


def test_tune_after_start_freezes_what_exists_and_collects_the_young_generation_less_often():
    threshold = gc.get_threshold()
    made = [[] for _ in range(1000)]  # lists: objects the collector tracks
    try:
        collector.tune_after_start()
        assert gc.get_threshold() == collector.THRESHOLDS
        assert gc.get_freeze_count() >= len(made)
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
