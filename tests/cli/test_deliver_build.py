"""`perfbot deliver --body`, `--pull-request` and `--dry-run`: a `/bench` on a pull request without
hand-edited JSON (none of GitHub's `issue_comment` examples is on a pull request), and what the bot
would write to GitHub for a delivery, with no server, no GitHub and no npm (the dry runs use the
examples perfbot carries, not the fetched test data)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.cli.main import main
from tests.cli import test_deliver
from tests.cli.test_deliver import SECRET, deliver
from tests.support import fixtures
from tests.support.serving import environment, served

# The fixtures of test_deliver.py (GitHub's example payloads as files, a recording server), and
# GitHub's test data for its schemas.
examples, recorder, github_test_data = test_deliver.examples, test_deliver.recorder, fixtures.github_test_data


def sent(received) -> dict:
    headers, body = received[-1]
    assert (
        headers["x-hub-signature-256"]
        == "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    )
    return json.loads(body)


def test_body_sets_the_comment_of_a_payload_file(examples, recorder):
    url, received = recorder
    path = examples["issue_comment", "created"]
    assert (
        main(["deliver", "issue_comment", str(path), "--body", "/bench", "--to", url, "--secret", SECRET])
        == 0
    )
    payload = sent(received)
    assert payload["comment"]["body"] == "/bench"
    original = json.loads(path.read_text())
    assert payload["comment"]["id"] == original["comment"]["id"] and payload["issue"] == original["issue"]


def test_pull_request_builds_a_comment_on_that_pull_request_from_githubs_example(recorder, github_test_data):
    url, received = recorder
    assert (
        main(
            [
                "deliver",
                "issue_comment",
                "--pull-request",
                "7",
                "--repo",
                "acme/engine",
                "--login",
                "maint",
                "--body",
                "/bench verify-step",
                "--to",
                url,
                "--secret",
                SECRET,
            ]
        )
        == 0
    )
    payload = sent(received)
    assert github_test_data.schema_errors("issue_comment", payload) == []
    assert (payload["action"], payload["issue"]["number"], payload["repository"]["full_name"]) == (
        "created",
        7,
        "acme/engine",
    )
    assert payload["issue"]["pull_request"]["url"].endswith("/repos/acme/engine/pulls/7")
    assert (payload["comment"]["body"], payload["comment"]["user"]["login"]) == (
        "/bench verify-step",
        "maint",
    )
    main(
        [
            "deliver",
            "issue_comment",
            "--pull-request",
            "7",
            "--body",
            "/bench",
            "--to",
            url,
            "--secret",
            SECRET,
        ]
    )
    assert sent(received)["comment"]["id"] != payload["comment"]["id"], "a new comment each time"


def test_pull_request_points_a_payload_file_at_a_pull_request(examples, recorder, github_test_data):
    url, received = recorder
    path = examples["issue_comment", "created"]
    assert "pull_request" not in json.loads(path.read_text())["issue"]
    assert (
        main(["deliver", "issue_comment", str(path), "--pull-request", "2", "--to", url, "--secret", SECRET])
        == 0
    )
    payload = sent(received)
    assert payload["issue"]["number"] == 2 and payload["issue"]["pull_request"]["html_url"].endswith(
        "/pull/2"
    )
    # The 2019 example breaks today's schema in places; pointing it at a pull request adds nothing to that.
    before = github_test_data.schema_errors("issue_comment", json.loads(path.read_text()))
    assert github_test_data.schema_errors("issue_comment", payload) == before


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1).filter(lambda t: not t.startswith("-")))
def test_any_body_arrives_as_given_and_signed(recorder, github_test_data, text):
    url, received = recorder
    assert (
        main(
            [
                "deliver",
                "issue_comment",
                "--pull-request",
                "3",
                "--body",
                text,
                "--to",
                url,
                "--secret",
                SECRET,
            ]
        )
        == 0
    )
    assert sent(received)["comment"]["body"] == text


def test_a_bench_comment_built_on_a_pull_request_is_queued_where_the_example_is_ignored(examples, tmp_path):
    env = environment(PERFBOT_WEBHOOK_SECRET=SECRET)
    path = str(examples["issue_comment", "created"])
    with served(tmp_path, env) as server:
        url = f"{server.base}/webhook"
        example = deliver("issue_comment", path, "--body", "/bench", "--to", url, env=env)
        assert example.stdout.startswith("200 OK: ignored"), example.stdout + example.stderr
        on_pull = deliver(
            "issue_comment", path, "--pull-request", "2", "--body", "/bench", "--to", url, env=env
        )
        assert on_pull.stdout.startswith("202 Accepted: queued"), on_pull.stdout + on_pull.stderr
        built = deliver("issue_comment", "--pull-request", "2", "--body", "/bench", "--to", url, env=env)
        assert built.stdout.startswith("202 Accepted: queued"), built.stdout + built.stderr


def test_dry_run_prints_the_review_the_bot_would_write(capsys):
    assert main(["deliver", "pull_request", "--pull-request", "2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("202 Accepted: queued (pull_request.opened, dry run)\n")
    assert "POST /repos/Codertocat/Hello-World/issues/2/comments\n    <!-- perfbot:risk-review -->" in out
    assert "### 🟥 Performance risk: **high** (81/100)" in out
    assert "check run 'perfbot / risk': completed, neutral" in out
    assert "labels: perf-risk: high" in out


def test_dry_run_of_a_bench_comment_prints_the_reactions_and_the_dispatch(capsys):
    assert main(["deliver", "issue_comment", "--pull-request", "2", "--body", "/bench", "--dry-run"]) == 0
    out = capsys.readouterr().out
    heads = [line for line in out.splitlines() if re.match(r"(POST|PATCH) ", line)]
    assert heads[0].endswith("/reactions") and heads[1].endswith(
        "/actions/workflows/perfbot-bench.yml/dispatches"
    )
    assert "reaction: eyes" in out and "reaction: rocket" in out
    assert '"head-sha": "3e4bb76d9da013e8b68744a70392fbfbc90e4881"' in out  # the sample's slow commit
    assert "check run 'perfbot / bench': in_progress" in out


def test_dry_run_with_a_diff_and_a_config_of_ones_own(tmp_path, capsys):
    diff = tmp_path / "change.diff"
    diff.write_text(
        "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-old\n+new\n"
    )
    config = tmp_path / "perfbot.yml"
    config.write_text("version: 1\nrisk:\n  comment: none\n")
    assert (
        main(
            [
                "deliver",
                "pull_request",
                "--pull-request",
                "4",
                "--dry-run",
                "--diff",
                str(diff),
                "--config",
                str(config),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "Performance risk: **none** (0/100)" in out
        and "check run 'perfbot / risk': completed, success" in out
    )
    assert "with the change given by --diff" in out and "/labels" not in out


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["ping", "--pull-request", "2", "--to", "http://127.0.0.1:1/webhook"],
            "--pull-request builds issue_comment",
        ),
        (["issue_comment", "--to", "http://127.0.0.1:1/webhook"], "PAYLOAD is needed"),
        (
            ["ping", "{file}", "--body", "x", "--to", "http://127.0.0.1:1/webhook"],
            "--body sets the body of a comment",
        ),
        (
            ["issue_comment", "{file}", "--repo", "a/b", "--to", "http://127.0.0.1:1/webhook"],
            "--repo is for an event",
        ),
        (
            ["issue_comment", "--pull-request", "2", "--repo", "no-slash", "--dry-run"],
            "--repo 'no-slash': expected",
        ),
        (["issue_comment", "--pull-request", "2", "--login", "a b", "--dry-run"], "--login 'a b': expected"),
        (
            ["issue_comment", "{file}", "--pull-request", "2", "--to", "http://127.0.0.1:1/webhook"],
            "the issue_comment payload has no issue",
        ),
        (
            ["pull_request", "--pull-request", "2", "--diff", "x.diff", "--to", "http://127.0.0.1:1/webhook"],
            "--diff is for --dry-run",
        ),
        (["pull_request", "--pull-request", "2", "--dry-run", "--diff", "{missing}"], "cannot read"),
        (["pull_request", "--pull-request", "0", "--dry-run"], "expected a pull request number, got 0"),
        (["pull_request", "--pull-request", "2"], "one of the arguments --to --dry-run is required"),
        (
            ["pull_request", "--pull-request", "2", "--dry-run", "--to", "http://127.0.0.1:1/webhook"],
            "not allowed with",
        ),
        (["ping", "{file}", "--dry-run"], "the payload names no repository"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(tmp_path, capsys, args, message):
    payload = tmp_path / "payload.json"
    payload.write_text('{"zen": "x"}')
    args = [a.format(file=payload, missing=tmp_path / "missing.diff") for a in args]
    assert main(["deliver", *args, "--secret", SECRET]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
