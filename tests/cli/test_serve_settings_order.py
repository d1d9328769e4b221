"""A server that cannot start says why in one line, not after a warning that does not matter then."""

from __future__ import annotations

import subprocess

from tests.support.serving import PERFBOT, environment


def test_a_missing_webhook_secret_is_the_only_line_not_a_credentials_warning_first(tmp_path):
    # No secret and no GitHub credentials: the secret is what stops the server; the credentials'
    # warning (reviews cannot be published) would matter only to a server that runs.
    done = subprocess.run(
        [*PERFBOT, "serve", "--port", "0"],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "perfbot: error: PERFBOT_WEBHOOK_SECRET is not set: it must match the App's webhook secret"
    ], done.stderr
