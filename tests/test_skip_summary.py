"""A local run says in one line what it skipped for want of a service, and how to run it; in CI
(CI=true) the report is pytest's own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = """
from tests.support.missing import skip_or_fail

def test_needs_postgres():
    skip_or_fail("PERFBOT_TEST_POSTGRES_URL is not set (.ci/run starts the service)")

def test_needs_redis():
    skip_or_fail("PERFBOT_TEST_REDIS_URL is not set")

def test_needs_the_browser():
    skip_or_fail("/usr/bin/chromium is missing (apt-get install chromium)")

def test_needs_postgres_too():
    skip_or_fail("PERFBOT_TEST_POSTGRES_URL is not set (.ci/run starts the service)")

def test_runs():
    pass
"""


def run(tmp_path: Path, ci: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_needs.py").write_text(TESTS)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-ra",
            "-p",
            "tests.support.skip_summary",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_needs.py"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def test_a_local_run_says_what_it_skipped_in_one_line(tmp_path):
    done = run(tmp_path, ci="false")
    assert done.returncode == 0, done.stdout
    lines = [line for line in done.stdout.splitlines() if "skipped" in line.lower() and "perfbot" in line]
    assert lines == [
        "perfbot: 4 tests skipped for want of PostgreSQL (2), Redis (1), Chromium (1): `make test-all` "
        "installs and starts them as CI does (Debian's packages: needs root or sudo)"
    ], done.stdout
    assert "SKIPPED [" not in done.stdout


def test_in_ci_the_missing_services_fail_and_the_report_is_pytests(tmp_path):
    done = run(tmp_path, ci="true")
    assert done.returncode == 1 and "4 failed, 1 passed" in done.stdout
    assert "tests skipped for want of" not in done.stdout and "FAILED " in done.stdout
