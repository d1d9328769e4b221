"""A SQLite database in a folder that does not exist, or that perfbot cannot write, is named by its
folder, at start, in one line (it said "the database perfbot.db is unavailable: unable to open
database file")."""

from __future__ import annotations

import os
import subprocess

import pytest

from bot.settings import SettingsError, check_sqlite_folder
from tests.support.serving import PERFBOT, environment


def test_a_missing_folder_is_named(tmp_path):
    folder = tmp_path / "no" / "such"
    with pytest.raises(SettingsError) as error:
        check_sqlite_folder(f"sqlite:///{folder / 'perfbot.db'}")
    assert str(error.value) == (
        f"PERFBOT_DATABASE_URL: the folder {folder} does not exist (SQLite makes the file, not its folder)"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes any folder")
def test_a_folder_perfbot_cannot_write_is_named(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o500)
    with pytest.raises(SettingsError, match=f"the folder {folder} is not writable"):
        check_sqlite_folder(f"sqlite:///{folder / 'perfbot.db'}")


def test_a_relative_path_in_an_existing_folder_memory_and_a_server_database_are_fine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for fine in ("sqlite:///perfbot.db", "sqlite:///:memory:", "postgresql+psycopg://h/db"):
        check_sqlite_folder(fine)


def test_perfbot_serve_exits_2_naming_the_folder(tmp_path):
    folder = tmp_path / "gone"
    done = subprocess.run(
        [*PERFBOT, "serve", "--port", "0"],
        cwd=tmp_path,
        env=environment(
            PERFBOT_WEBHOOK_SECRET="s", PERFBOT_DATABASE_URL=f"sqlite:///{folder / 'perfbot.db'}"
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"perfbot: error: PERFBOT_DATABASE_URL: the folder {folder} does not exist "
        "(SQLite makes the file, not its folder)"
    ], done.stderr
