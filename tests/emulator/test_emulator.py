"""The emulator holds requests to GitHub's REST description and keeps GitHub's URLs pointing home."""

from __future__ import annotations

import requests


def test_a_request_that_breaks_the_rest_description_is_refused_and_recorded(emulator):
    emulator.add_repo("o/r")
    emulator.add_pull("o/r", 1, "a" * 40, "")
    response = requests.post(
        f"{emulator.base_url}/repos/o/r/issues/1/comments", json={"bdy": "typo"}, timeout=5
    )
    assert response.status_code == 422
    assert len(emulator.invalid) == 1 and "body" in emulator.invalid[0]
    emulator.invalid.clear()


def test_an_unimplemented_endpoint_says_so(emulator):
    response = requests.get(f"{emulator.base_url}/repos/o/r/releases", timeout=5)
    assert response.status_code == 501 and "does not implement" in response.json()["message"]


def test_answers_come_from_githubs_examples_with_urls_pointing_at_the_emulator(emulator):
    emulator.add_repo("o/r")
    emulator.add_pull("o/r", 9, "b" * 40, "")
    pull = requests.get(f"{emulator.base_url}/repos/o/r/pulls/9", timeout=5).json()
    assert pull["head"]["sha"] == "b" * 40 and pull["number"] == 9
    assert pull["url"] == f"{emulator.base_url}/repos/o/r/pulls/9"
    assert pull["issue_url"] == f"{emulator.base_url}/repos/o/r/issues/9"
    assert "api.github.com" not in str(pull)


def test_comments_are_paginated_with_link_headers(emulator):
    emulator.add_repo("o/r")
    emulator.add_pull("o/r", 1, "a" * 40, "")
    for i in range(3):
        requests.post(f"{emulator.base_url}/repos/o/r/issues/1/comments", json={"body": f"c{i}"}, timeout=5)
    first = requests.get(f"{emulator.base_url}/repos/o/r/issues/1/comments?per_page=2", timeout=5)
    assert [c["body"] for c in first.json()] == ["c0", "c1"]
    second = requests.get(first.links["next"]["url"], timeout=5)
    assert [c["body"] for c in second.json()] == ["c2"]


def test_an_enforced_token_rejects_strangers(emulator):
    emulator.tokens.add("good")
    emulator.add_repo("o/r")
    emulator.add_pull("o/r", 1, "a" * 40, "")
    url = f"{emulator.base_url}/repos/o/r/pulls/1"
    assert requests.get(url, headers={"Authorization": "token bad"}, timeout=5).status_code == 401
    assert requests.get(url, headers={"Authorization": "token good"}, timeout=5).status_code == 200
