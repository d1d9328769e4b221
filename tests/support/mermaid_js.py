"""Mermaid, the library GitHub renders ```mermaid blocks of comments with, for the browser test that
looks at the PR comment's chart: the same pinned npm release, fetched and checked the same way and
kept in the same .cache folder as the sandbox's thread page uses (bot/sandbox/mermaid.py)."""

from __future__ import annotations

from pathlib import Path

from bot.sandbox import mermaid

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache"  # the sandbox's default folder is .cache/perfbot-sandbox: its cache is here too

MissingMermaid = mermaid.Unavailable


def ensure() -> Path:
    """The path of mermaid.min.js, fetched with `npm pack` the first time."""
    return mermaid.script(CACHE)
