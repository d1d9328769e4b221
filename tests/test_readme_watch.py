"""The README's first section says in words that the watch of the default branch is on by default,
what it costs and how to switch it off, with the defaults the code has."""

from __future__ import annotations

import re
from pathlib import Path

from bot.core.config.schema import DEFAULT_RUN_MINUTES, DispatchConfig, WatchConfig

README = Path(__file__).resolve().parents[1] / "README.md"


def first_section() -> str:
    return re.split(r"^## ", README.read_text(), flags=re.M)[0]


def test_the_first_section_says_the_watch_is_on_what_it_costs_and_how_to_stop_it():
    text = " ".join(first_section().split())
    dispatch, watch = DispatchConfig(), WatchConfig()
    assert "**on by default**" in text
    assert f"`bench.dispatch.on_merge: {dispatch.on_merge}`" in text
    assert f"`bench.watch.bisect: {str(watch.bisect).lower()}`" in text
    assert (
        f"`bench.dispatch.budget: {dispatch.budget}`" in text
        and f"{dispatch.budget} GPU minutes a day" in text
    )
    assert f"{DEFAULT_RUN_MINUTES:g} minutes per benchmark run" in text
    assert "`on_merge: never`" in text and "`bisect: false`" in text and "`budget: 0`" in text
