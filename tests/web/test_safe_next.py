"""`safe_next`, the page a sign-in returns to: whatever it accepts, a browser resolves to this
server, after the clean-up browsers make to a URL (the WHATWG URL standard's)."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from flask import Flask, redirect
from hypothesis import example, given
from hypothesis import strategies as st

from bot.web.dashboard.signin import safe_next

HOST = "perfbot.example"
# What browsers do to a URL before parsing it: strip leading and trailing C0 controls and spaces,
# remove every tab and line break, and read a backslash as a slash (http and https URLs).
_EDGES = "".join(map(chr, range(0x21)))


def as_a_browser_reads_it(location: str) -> str:
    cleaned = re.sub(r"[\t\n\r]", "", location.strip(_EDGES)).replace("\\", "/")
    return urljoin(f"https://{HOST}/dashboard/page", cleaned)


def location_header(next_page: str) -> str:
    """The Location header that the app sends for a redirect to ``next_page`` (werkzeug quotes it)."""
    app = Flask("probe")
    with app.test_request_context():
        return redirect(next_page).headers["Location"]


# Characters that have fooled redirect checks: separators, controls, whitespace of every kind,
# look-alike slashes, and the parts of an authority.
TRICKY = st.sampled_from(
    list("/\\\t\n\r \x00\x0b\x0c\x1f\x7f\x85\xa0\u2028\u3000\uff0f\u2215@:.%?#")
    + ["evil.example", "%09", "%2F", "%5C", "https:", "javascript:"]
)
NEXT = st.lists(st.one_of(TRICKY, st.text(max_size=3)), max_size=8).map("".join)


@given(NEXT)
@example("/%09/evil.example/x")
@example("/\t/evil.example/x")
@example("/\\evil.example")
@example(" //evil.example")
@example("/\n/evil.example")
@example("https://evil.example/")
@example("/merges/o/r/7?page=2#triage")
def test_no_accepted_next_leads_off_the_server(candidate):
    accepted = safe_next(candidate)
    assert accepted == "/" or accepted == candidate
    for location in (accepted, location_header(accepted)):
        resolved = urlsplit(as_a_browser_reads_it(location))
        assert (resolved.scheme, resolved.netloc) == ("https", HOST), (candidate, location)


def test_the_pages_of_the_dashboard_are_accepted_as_they_are():
    for page in (
        "/",
        "/merges/sgl-project/sglang/1347",
        "/history?series=o/r|verify-step|cycle_ms",
        "/?level=high&state=open&page=3",
        "/merges/o/r/7#triage",
    ):
        assert safe_next(page) == page


def test_anything_that_is_not_a_plain_path_goes_to_the_list():
    for bad in (
        "/\t/evil.example/x",
        "//evil.example",
        "/\\evil.example",
        "https://evil.example/x",
        "evil.example",
        "/caf\u00e9",
        "/a b",
        "/\x00",
        "",
        None,
        7,
        "/" + "a" * 2_000,
    ):
        assert safe_next(bad) == "/", repr(bad)
