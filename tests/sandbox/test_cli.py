"""`perfbot sandbox` refuses, in one line and with exit status 2, what it cannot start with: a
folder that is not its own, a port in use or out of range."""

from __future__ import annotations

import os
import socket

import pytest

from bot.cli.main import main
from tests.support.serving import free_port


def refused(capsys, *args: str) -> str:
    assert main(["sandbox", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_folder_that_is_not_the_sandboxs_own_is_left_alone(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    err = refused(
        capsys, "--dir", str(tmp_path), "--port", str(free_port()), "--github-port", str(free_port())
    )
    assert "exists and is no sandbox folder: choose another with --dir" in err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_folder_a_running_sandbox_uses_is_left_alone(tmp_path, capsys):
    (tmp_path / ".perfbot-sandbox").write_text(f"{os.getppid()}\nmade by perfbot sandbox\n")
    (tmp_path / "perfbot.db").write_text("in use")
    err = refused(
        capsys, "--dir", str(tmp_path), "--port", str(free_port()), "--github-port", str(free_port())
    )
    assert f"a running perfbot sandbox (pid {os.getppid()}) uses it" in err
    assert (tmp_path / "perfbot.db").read_text() == "in use"


@pytest.mark.parametrize("option", ["--port", "--github-port"])
def test_a_port_in_use_is_named(tmp_path, capsys, option):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = str(taken.getsockname()[1])
        ports = {"--port": str(free_port()), "--github-port": str(free_port()), option: busy}
        err = refused(capsys, "--dir", str(tmp_path / "sandbox"), *[x for kv in ports.items() for x in kv])
    assert f"127.0.0.1:{busy} is in use (another perfbot?): choose another port with {option}" in err
    assert not (tmp_path / "sandbox").exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (["--port", "0"], "--port must be from 1 to 65535"),
        (["--port", "70000"], "--port must be from 1 to 65535"),
        (["--port", "9000", "--github-port", "9000"], "--github-port must differ from --port"),
        (["--parallel", "0"], "--parallel must be from 1 to 50"),
        (["--merge-rounds", "0"], "--merge-rounds must be from 1 to 50"),
    ],
)
def test_numbers_out_of_range(tmp_path, capsys, args, message):
    assert message in refused(capsys, "--dir", str(tmp_path / "sandbox"), *args)
