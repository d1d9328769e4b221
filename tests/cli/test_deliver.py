"""`perfbot deliver` with GitHub's example payloads: the request carries the headers GitHub's
webhook description requires, signed over the exact bytes sent; a real `perfbot serve` accepts
what it sends, deduplicates a repeated delivery id and refuses a wrong secret; and every mistake
is one line with exit status 2."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bot.cli.main import main
from tests.support import github_data
from tests.support.missing import skip_or_fail
from tests.support.serving import PERFBOT, environment, free_port, served

SECRET = "It's a Secret to Everybody"
# What perfbot answers to GitHub's first example of each: the comment examples are on issues, not
# pull requests, and the workflow run is no benchmark that perfbot dispatched.
EXAMPLES = {
    ("ping", None): "200 OK: pong",
    ("pull_request", "opened"): "202 Accepted: queued",
    ("pull_request", "synchronize"): "202 Accepted: queued",
    ("installation", "created"): "202 Accepted: queued",
    ("issue_comment", "created"): "200 OK: ignored",
    ("workflow_run", "completed"): "200 OK: ignored",
}


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    """GitHub's example payloads, one file each, as a user would save them."""
    try:
        github_data.ensure()
    except github_data.MissingData as error:
        skip_or_fail(str(error))
    folder = tmp_path_factory.mktemp("payloads")
    files = {}
    for event, action in EXAMPLES:
        payload = next(
            p for p in github_data.webhook_examples(event) if action is None or p.get("action") == action
        )
        path = folder / f"{event}.{action or 'example'}.json"
        path.write_text(json.dumps(payload, indent=2))
        files[event, action] = path
    return files


class Recorder(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Recorder.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        answer = json.dumps({"message": "recorded"}).encode()
        self.send_response(202)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder():
    Recorder.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/webhook", Recorder.received
    server.shutdown()
    server.server_close()


def test_the_request_has_every_header_githubs_description_requires_and_a_signature_of_the_file(
    examples, recorder, capsys
):
    url, received = recorder
    path = examples["pull_request", "opened"]
    assert main(["deliver", "pull_request", str(path), "--to", url, "--secret", SECRET]) == 0
    headers, body = received[0]
    assert body == path.read_bytes(), "the file's own bytes, as GitHub signs what it sends"
    required = [
        p["name"].lower()
        for p in github_data.webhook_spec()["webhooks"]["pull-request-opened"]["post"]["parameters"]
        if p["in"] == "header" and p.get("required")
    ]
    assert set(required) <= set(headers), set(required) - set(headers)
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert headers["x-hub-signature-256"] == expected
    assert headers["x-github-event"] == "pull_request" and headers["user-agent"].startswith(
        "GitHub-Hookshot/"
    )
    assert headers["content-type"] == "application/json"
    payload = json.loads(body)
    assert (
        headers["x-github-hook-installation-target-type"],
        headers["x-github-hook-installation-target-id"],
    ) == ("repository", str(payload["repository"]["id"]))
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and line.startswith("202 Accepted: recorded (pull_request.opened, delivery ")


def test_action_and_delivery_are_the_ones_asked_for(examples, recorder, monkeypatch, capsys):
    url, received = recorder
    monkeypatch.setenv("PERFBOT_WEBHOOK_SECRET", f"{SECRET},an-older-one")
    path = examples["pull_request", "opened"]
    assert (
        main(
            [
                "deliver",
                "pull_request",
                str(path),
                "--to",
                url,
                "--action",
                "reopened",
                "--delivery",
                "72d3162e-cc78-11e3-81ab-4c9367dc0958",
                "--hook-id",
                "4242",
            ]
        )
        == 0
    )
    headers, body = received[0]
    assert json.loads(body)["action"] == "reopened"
    assert (
        headers["x-github-delivery"] == "72d3162e-cc78-11e3-81ab-4c9367dc0958"
        and headers["x-github-hook-id"] == "4242"
    )
    assert (
        headers["x-hub-signature-256"]
        == "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    )


def deliver(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*PERFBOT, "deliver", *args], env=env, capture_output=True, text=True, timeout=60)


def test_a_real_server_accepts_githubs_examples_dedupes_a_redelivery_and_refuses_a_wrong_secret(
    examples, tmp_path
):
    env = environment(PERFBOT_WEBHOOK_SECRET=SECRET)
    with served(tmp_path, env) as server:
        url = f"{server.base}/webhook"
        for (event, action), path in examples.items():
            sent = deliver(event, str(path), "--to", url, env=env)
            assert sent.returncode == 0 and sent.stdout.startswith(EXAMPLES[event, action]), (
                sent.stdout,
                sent.stderr,
            )
        path = examples["pull_request", "opened"]
        again = deliver("pull_request", str(path), "--to", url, "--delivery", "d-1", env=env)
        assert again.returncode == 0 and "queued" in again.stdout
        again = deliver("pull_request", str(path), "--to", url, "--delivery", "d-1", env=env)
        assert again.returncode == 0 and again.stdout.startswith("200 OK: duplicate")
        wrong = deliver("pull_request", str(path), "--to", url, "--secret", "not the secret", env=env)
        assert wrong.returncode == 1 and wrong.stdout.startswith("403 Forbidden: signature does not match")
        assert wrong.stderr == ""


@pytest.mark.parametrize(
    "content,secret,target,message",
    [
        (
            None,
            SECRET,
            "http://127.0.0.1:{port}/webhook",
            "missing.json: cannot read (No such file or directory)",
        ),
        (
            '{"action": "opened",',
            SECRET,
            "http://127.0.0.1:{port}/webhook",
            "not valid JSON (line 1, column 21",
        ),
        ("[1, 2]", SECRET, "http://127.0.0.1:{port}/webhook", "a webhook payload is a JSON object, not list"),
        ('{"zen": "x"}', None, "http://127.0.0.1:{port}/webhook", "no webhook secret: pass --secret or set"),
        ('{"zen": "x"}', SECRET, "http://127.0.0.1:{port}/webhook", "cannot reach http://127.0.0.1:"),
        ('{"zen": "x"}', SECRET, "127.0.0.1:{port}/webhook", "expected an http:// or https:// URL"),
        ('{"zen": "x"}', SECRET, "file:///etc/passwd", "expected an http:// or https:// URL"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(tmp_path, monkeypatch, capsys, content, secret, target, message):
    monkeypatch.delenv("PERFBOT_WEBHOOK_SECRET", raising=False)
    path = tmp_path / "missing.json"
    if content is not None:
        path = tmp_path / "payload.json"
        path.write_text(content)
    args = ["deliver", "ping", str(path), "--to", target.format(port=free_port())]
    assert main(args + (["--secret", secret] if secret else [])) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    "timeout,message",
    [
        ("-1", "argument --timeout: expected a positive number, got -1"),
        ("0", "argument --timeout: expected a positive number, got 0"),
        ("nan", "argument --timeout: expected a finite number, got nan"),
        ("inf", "argument --timeout: expected a finite number, got inf"),
        ("soon", "argument --timeout: invalid positive_float value: 'soon'"),
    ],
)
def test_a_timeout_that_is_no_positive_number_of_seconds_is_one_line_and_exit_2(
    tmp_path, capsys, timeout, message
):
    path = tmp_path / "payload.json"
    path.write_text('{"zen": "x"}')
    args = [
        "deliver",
        "ping",
        str(path),
        "--to",
        f"http://127.0.0.1:{free_port()}/webhook",
        "--secret",
        SECRET,
    ]
    assert main([*args, "--timeout", timeout]) == 2
    err = capsys.readouterr().err
    assert err == f"perfbot: error: deliver: {message} (see 'perfbot deliver --help')\n"


def test_a_timeout_of_more_than_a_day_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "payload.json"
    path.write_text('{"zen": "x"}')
    args = [
        "deliver",
        "ping",
        str(path),
        "--to",
        f"http://127.0.0.1:{free_port()}/webhook",
        "--secret",
        SECRET,
    ]
    assert main([*args, "--timeout", "1e10"]) == 2  # socket.settimeout raises OverflowError for it
    assert (
        capsys.readouterr().err == "perfbot: error: --timeout 1e+10: expected at most 86400 seconds (a day)\n"
    )
    assert main([*args, "--timeout", "86400"]) == 2  # accepted: the port is closed, so it cannot reach it
    assert "cannot reach http://127.0.0.1:" in capsys.readouterr().err


@pytest.mark.parametrize(
    "target,reason",
    [
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://[::1/webhook", "Invalid IPv6 URL"),
        ("https://[127.0.0.1]/webhook", "An IPv4 address cannot be in brackets"),
    ],
)
def test_a_url_that_urlsplit_refuses_is_one_line_and_exit_2(tmp_path, capsys, target, reason):
    path = tmp_path / "payload.json"
    path.write_text('{"zen": "x"}')
    assert main(["deliver", "ping", str(path), "--to", target, "--secret", SECRET]) == 2
    assert capsys.readouterr().err == f"perfbot: error: --to {target}: not a valid URL ({reason})\n"


@pytest.mark.parametrize(
    "args,shown",
    [
        (["ping\nX-Evil: 1"], "EVENT 'ping\\nX-Evil: 1'"),
        (["pull request"], "EVENT 'pull request'"),
        (["pull\N{EURO SIGN}"], "EVENT 'pull\N{EURO SIGN}'"),
        ([""], "EVENT ''"),
        (["ping", "--delivery", "d-1\r\nX-Evil: 1"], "--delivery 'd-1\\r\\nX-Evil: 1'"),
        (["ping", "--delivery", "d 1"], "--delivery 'd 1'"),
        (["ping", "--delivery", "d\x00"], "--delivery 'd\\x00'"),
        (["ping", "--hook-id", "1\n2"], "--hook-id '1\\n2'"),
        (["ping", "--hook-id", "\N{LINE SEPARATOR}"], "--hook-id '\\u2028'"),
        (["ping", "--hook-id", ""], "--hook-id ''"),
    ],
)
def test_a_header_value_that_is_not_printable_ascii_is_one_line_and_exit_2(tmp_path, capsys, args, shown):
    path = tmp_path / "payload.json"
    path.write_text('{"zen": "x"}')
    event, *options = args
    target = f"http://127.0.0.1:{free_port()}/webhook"
    assert main(["deliver", event, str(path), "--to", target, "--secret", SECRET, *options]) == 2
    assert capsys.readouterr().err == (
        f"perfbot: error: {shown}: expected printable ASCII characters, no spaces (it is an HTTP header's value)\n"
    )


@pytest.mark.parametrize("tail", ["\nX-Evil: 1", "\t", "\x7f", "\N{LINE SEPARATOR}"])
def test_a_url_with_a_control_character_is_one_line_and_exit_2(tmp_path, capsys, tail):
    path = tmp_path / "payload.json"
    path.write_text('{"zen": "x"}')
    target = f"http://127.0.0.1:{free_port()}/webhook{tail}"
    assert main(["deliver", "ping", str(path), "--to", target, "--secret", SECRET]) == 2
    assert capsys.readouterr().err == f"perfbot: error: --to {target!r}: a URL holds no control characters\n"
