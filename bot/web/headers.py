"""The security headers of every response of the app: a content security policy that lets pages
load only this server's own scripts, styles and images (the dashboard's uPlot is vendored, its
chart data is inert JSON), no framing by other sites, no MIME sniffing, and no referrer sent to
other sites."""

from __future__ import annotations

from flask import Flask, Response

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",  # frame-ancestors for browsers that predate it
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def install(app: Flask) -> None:
    app.after_request(_secure)


def _secure(response: Response) -> Response:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    return response
