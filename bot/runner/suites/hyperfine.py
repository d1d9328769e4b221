"""The `hyperfine` suite: hyperfine's exported JSON, one metric per timed command.

The kind's options: `bot.core.config.suite_kinds.hyperfine`;
the format: `bot.core.formats.hyperfine`.
"""

from __future__ import annotations

from bot.core.config.suite_kinds.hyperfine import HyperfineSuite
from bot.core.formats import hyperfine as fmt
from bot.core.formats.base import Readings

from .result_file import ResultFileBench


class HyperfineBench(ResultFileBench, kind="hyperfine"):
    config: HyperfineSuite
    FILE = "hyperfine.json"

    def read(self, content: str, source: str) -> Readings:
        return fmt.parse(content, source)
