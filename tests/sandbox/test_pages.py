"""The stand-in's pages: a pull request's thread as the bot wrote it, its files with the anchors
the bot links to, a comment written there reaching the bot as GitHub's webhook, and deliveries
from `perfbot deliver` recorded and passed on unchanged."""

from __future__ import annotations

import hashlib
import json

import pytest
import requests

from bot.core.render.comment import MARKER
from bot.sandbox import hookshot, sample
from bot.sandbox.github import GitHubEmulator
from bot.sandbox.pages import Hooks, Site

REPO, SECRET = "sandbox/mini-engine", "sandbox-secret"


@pytest.fixture
def site():
    standin = GitHubEmulator()
    standin.web_links = standin.stamped = True
    standin.add_repo(REPO, "master").permissions["Codertocat"] = "admin"
    standin.add_pull(
        REPO,
        11,
        sample.SLOW_SHA,
        sample.slow_diff(),
        base_sha=sample.BEFORE_SLOW_SHA,
        base_ref="master",
        author="mini-engine-dev",
        title="Fix PCG MoE error",
        head_ref="reland",
    )
    sent, forwarded = [], []

    def send(event, payload):
        sent.append((event, payload))
        return hookshot.Answer(202, "Accepted", "queued")

    def forward(body, headers):
        forwarded.append((body, headers))
        return hookshot.Answer(202, "Accepted", "queued")

    standin.start()
    standin.site = Site(standin, Hooks(send, forward, SECRET, 1), "Codertocat", "http://127.0.0.1:1/")
    yield standin, sent, forwarded
    standin.stop()


def test_the_thread_shows_the_bots_comment_rendered_its_reactions_checks_and_label(site):
    standin, _, _ = site
    comment = standin.add_comment(
        REPO,
        11,
        f"{MARKER}\n### 🔴 Performance risk: **high** (81/100)\n\n"
        "| score | file |\n|---:|---|\n| 66 | `pynccl.py` |",
        "perfbot[bot]",
        user_type="Bot",
    )
    standin.reactions.append({"comment_id": comment["id"], "login": "perfbot[bot]", "content": "eyes"})
    standin.labels[(REPO, 11)] = ["perf-risk: high"]
    standin.check_runs[7] = {
        "id": 7,
        "name": "perfbot / risk",
        "head_sha": sample.SLOW_SHA,
        "status": "completed",
        "conclusion": "neutral",
        "output": {"title": "Performance risk: high (81/100)"},
        "_repo": REPO,
    }
    page = requests.get(f"{standin.base_url}/{REPO}/pull/11", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<h3>🔴 Performance risk: <strong>high</strong> (81/100)</h3>" in page.text
    assert "<code>pynccl.py</code>" in page.text and MARKER not in page.text
    assert "perfbot[bot]</strong>" in page.text and '<span class="reaction">👀 1</span>' in page.text
    assert "perfbot / risk" in page.text and "Performance risk: high (81/100)</span>" in page.text
    assert '<span class="label risk-high">perf-risk: high</span>' in page.text


def test_the_files_carry_the_anchors_the_bots_links_point_at(site):
    standin, _, _ = site
    page = requests.get(f"{standin.base_url}/{REPO}/pull/11/files", timeout=10).text
    anchor = "diff-" + hashlib.sha256(b"mini_engine/distributed/pynccl.py").hexdigest()
    assert f'id="{anchor}"' in page
    assert f'id="{anchor}R19"' in page and f'id="{anchor}L13"' in page  # an added and a removed line


def test_a_comment_written_on_the_thread_reaches_the_bot_as_githubs_webhook(site):
    standin, sent, _ = site
    answer = requests.post(
        f"{standin.base_url}/{REPO}/pull/11/comments",
        data={"body": "/bench\r\n"},
        allow_redirects=False,
        timeout=10,
    )
    [comment] = standin.comments_on(REPO, 11)
    assert answer.status_code == 303 and answer.headers["Location"].endswith(f"#issuecomment-{comment['id']}")
    assert (comment["body"], comment["user"]["login"]) == ("/bench", "Codertocat")
    [(event, payload)] = sent
    assert (event, payload["action"], payload["comment"]["id"], payload["comment"]["body"]) == (
        "issue_comment",
        "created",
        comment["id"],
        "/bench",
    )
    assert payload["issue"]["number"] == 11 and "pull_request" in payload["issue"]


def test_a_delivery_sent_to_the_stand_in_is_checked_recorded_and_passed_on_unchanged(site):
    standin, _, forwarded = site
    body = json.dumps(
        {
            "action": "created",
            "repository": {"full_name": REPO},
            "issue": {"number": 11},
            "comment": {"id": 424242, "body": "/bench", "user": {"login": "Codertocat"}},
        }
    ).encode()
    headers = hookshot.headers("issue_comment", body, "not the secret", "g-1")
    refused = requests.post(f"{standin.base_url}/webhook", data=body, headers=headers, timeout=10)
    assert refused.status_code == 403 and forwarded == [] and standin.comments == {}
    headers = hookshot.headers("issue_comment", body, SECRET, "g-2")
    answer = requests.post(f"{standin.base_url}/webhook", data=body, headers=headers, timeout=10)
    assert (answer.status_code, answer.json()) == (202, {"message": "queued"})
    assert standin.comments[424242]["body"] == "/bench"
    [(passed, passed_headers)] = forwarded
    assert passed == body and passed_headers["X-Hub-Signature-256"] == headers["X-Hub-Signature-256"]


@pytest.mark.parametrize(
    "path", ["/sandbox/mini-engine/pull/12", "/other/repo/pull/1", "/sandbox/mini-engine/actions/runs/5"]
)
def test_what_the_stand_in_does_not_hold_is_404(site, path):
    standin, _, _ = site
    assert requests.get(f"{standin.base_url}{path}", timeout=10).status_code == 404


def test_the_rest_api_is_not_shadowed_by_the_pages(site):
    standin, _, _ = site
    assert (
        requests.get(f"{standin.base_url}/repos/{REPO}/pulls/11", timeout=10).json()["title"]
        == "Fix PCG MoE error"
    )
