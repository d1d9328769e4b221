"""One line, at the end of a local test run, for the tests skipped for want of something this
machine lacks (PostgreSQL, Redis, GitHub's test data, Chromium, torch ...), and how to run them;
instead of pytest's line per skipped test's reason. In CI (CI=true) a missing service fails its
tests instead (tests/support/missing.py), and pytest reports as it always did."""

from __future__ import annotations

from collections import Counter

import pytest

from .missing import IN_CI

# What a skip's reason names, and what to call it in the line.
NEEDS = (
    ("PERFBOT_TEST_POSTGRES_URL", "PostgreSQL"),
    ("PERFBOT_TEST_REDIS_URL", "Redis"),
    ("GitHub test data", "GitHub's test data (npm)"),
    ("chromium", "Chromium"),
    ("torch", "torch"),
    ("playwright", "Playwright"),
)
HOW = "`make test-all` installs and starts them as CI does (Debian's packages: needs root or sudo)"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if not IN_CI:
        chars = config.option.reportchars.replace("a", "fEX").replace("A", "fEXp")
        config.option.reportchars = chars.replace("s", "").replace("S", "")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    if IN_CI or not skipped:
        return
    wanting: Counter[str] = Counter()
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        wanting[next((name for key, name in NEEDS if key.lower() in reason.lower()), "other reasons")] += 1
    what = ", ".join(f"{name} ({count})" for name, count in wanting.most_common())
    terminalreporter.write_line(
        f"perfbot: {len(skipped)} tests skipped for want of {what}: {HOW}", yellow=True, bold=True
    )
