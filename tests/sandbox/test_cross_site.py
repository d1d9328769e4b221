"""The GitHub stand-in refuses writes that a web page of another site makes a browser send (a form
posting `/bench` to a thread, say); its own pages' forms, and clients that are no browser (the
bot, `perfbot deliver`), still write."""

from __future__ import annotations

import pytest
import requests

from tests.sandbox.test_pages import REPO
from tests.sandbox.test_pages import site as site  # noqa: F401 (a fixture)

FOREIGN = "https://evil.example"


def post_comment(standin, headers: dict[str, str]) -> requests.Response:
    return requests.post(
        f"{standin.base_url}/{REPO}/pull/11/comments",
        data={"body": "/bench"},
        headers=headers,
        allow_redirects=False,
        timeout=10,
    )


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": FOREIGN, "Sec-Fetch-Site": "cross-site"},
        {"Origin": FOREIGN},  # a browser without Fetch metadata
        {"Sec-Fetch-Site": "cross-site"},  # one that left Origin out
        {"Origin": "null"},  # a sandboxed frame or a file:// page
    ],
)
def test_a_cross_site_form_post_is_refused_and_changes_nothing(site, headers):  # noqa: F811
    standin, sent, _ = site
    answer = post_comment(standin, headers)
    assert answer.status_code == 403 and "cross-site" in answer.text
    assert standin.comments_on(REPO, 11) == [] and sent == []


def test_a_cross_site_post_to_the_rest_api_is_refused_too(site):  # noqa: F811
    standin, _, _ = site
    answer = requests.post(
        f"{standin.base_url}/repos/{REPO}/issues/11/comments",
        json={"body": "/bench"},
        headers={"Origin": FOREIGN, "Sec-Fetch-Site": "cross-site"},
        timeout=10,
    )
    assert answer.status_code == 403 and standin.comments_on(REPO, 11) == []


@pytest.mark.parametrize(
    "headers",
    [
        {},  # no browser: curl, the bot, `perfbot deliver`
        {"Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "none"},  # typed in the address bar
    ],
)
def test_the_stand_in_s_own_form_and_non_browsers_still_write(site, headers):  # noqa: F811
    standin, sent, _ = site
    if headers.get("Sec-Fetch-Site") == "same-origin":
        headers = {**headers, "Origin": standin.base_url}
    answer = post_comment(standin, headers)
    assert answer.status_code == 303, answer.text
    assert len(standin.comments_on(REPO, 11)) == 1 and len(sent) == 1


def test_a_trusted_origin_may_post_the_app_manifest_form(site):  # noqa: F811
    """GitHub's App registration page takes a form posted by the App's own server (another
    origin): the page only shows what would be created; creating it is a same-origin post."""
    standin, _, _ = site
    standin.trusted_origins.add("http://127.0.0.1:1")

    def post_manifest(origin: str) -> requests.Response:
        return requests.post(
            f"{standin.base_url}/settings/apps/new",
            data={"manifest": '{"url": "http://127.0.0.1:1", "redirect_url": "http://127.0.0.1:1/cb"}'},
            headers={"Origin": origin, "Sec-Fetch-Site": "cross-site"},
            timeout=10,
        )

    assert post_manifest("http://127.0.0.1:1").status_code == 200
    assert post_manifest(FOREIGN).status_code == 403
    create = requests.post(
        f"{standin.base_url}/settings/apps/new/create",
        data={"manifest": "{}", "state": "", "owner": "x"},
        headers={"Origin": FOREIGN, "Sec-Fetch-Site": "cross-site"},
        timeout=10,
    )
    assert create.status_code == 403 and standin.created_apps == []
