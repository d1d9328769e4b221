"""`perfbot relay`: a mistaken address is one line and exit 2, never a traceback."""

from __future__ import annotations

import socket

import pytest

from bot.cli.main import main


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["--listen", "nope", "--to", "http://127.0.0.1:8000/webhook"],
            "perfbot: error: --listen: expected HOST:PORT, e.g. 0.0.0.0:9000, got 'nope'",
        ),
        (
            ["--listen", "127.0.0.1:70000", "--to", "http://127.0.0.1:8000/webhook"],
            "perfbot: error: --listen: expected HOST:PORT, e.g. 0.0.0.0:9000, got '127.0.0.1:70000'",
        ),
        (
            ["--listen", "127.0.0.1:0", "--to", "ftp://example.com/"],
            "perfbot: error: --to: expected perfbot's http(s) webhook URL, e.g. http://127.0.0.1:8000/webhook, "
            "got 'ftp://example.com/'",
        ),
    ],
)
def test_bad_addresses_exit_2_with_one_line(argv, line, capsys):
    assert main(["relay", *argv]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [line]


def test_a_port_in_use_exits_2_with_one_line(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["relay", "--listen", f"127.0.0.1:{port}", "--to", "http://127.0.0.1:8000/webhook"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"perfbot: error: --listen: cannot listen on 127.0.0.1:{port} (")
