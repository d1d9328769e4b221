"""A pytest plugin: `python3` on the tests' PATH is an interpreter with nothing installed.

The runner watches the engine's import path before every round (`bot/runner/integrity.py`): with
no ``--python``, or with ``shutil.which("python3")``, that is the machine's python3, whose
site-packages can hold tens of thousands of files (about 50,000 on the CI machine), and walking them
was half the time of every test that runs rounds. A virtual environment without pip, made once per
session from this interpreter, imports from the standard library alone; the tests that need more
(torch for the CPU suites, perfbot itself) name `sys.executable` as they always have.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

_MADE: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    # Before collection: test modules read `shutil.which("python3")` when they are imported.
    folder = Path(tempfile.mkdtemp(prefix="perfbot-bare-python-"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    _MADE.append(folder)
    os.environ["PATH"] = f"{folder / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"


def pytest_unconfigure(config: pytest.Config) -> None:
    while _MADE:
        shutil.rmtree(_MADE.pop(), ignore_errors=True)
