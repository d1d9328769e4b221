"""The GitHub stand-in of the product (bot/sandbox/github.py) as the tests run it: every request
validated against GitHub's official REST description (openapi-core), which the product does not
carry. A request that breaks it is answered 422 and listed in ``invalid``, which the `emulator`
fixture requires to be empty at the end of each test."""

from __future__ import annotations

import threading

from openapi_core import OpenAPI
from openapi_core.testing import MockRequest
from werkzeug.wrappers import Request

from bot.sandbox import github
from bot.sandbox.github import (  # noqa: F401 (what the tests import from here)
    ACTIONS_EXAMPLE_REPO,
    BLOB_PREFIX,
    CONTRACT_INPUTS,
    EXAMPLE_REPO,
    GITHUB,
    RUN_NAME,
    Pull,
    Recorded,
    RepoState,
    Workflow,
    wait_for,
)

from . import github_data

_LOCK = threading.Lock()
_OPENAPI: OpenAPI | None = None


def openapi() -> OpenAPI:
    """GitHub's REST description for openapi-core, loaded once (spec self-validation skipped: 12 s)."""
    global _OPENAPI
    with _LOCK:
        if _OPENAPI is None:
            from jsonschema_path import SchemaPath
            from openapi_core import Config

            _OPENAPI = OpenAPI(
                SchemaPath.from_dict(github_data.rest_spec()), config=Config(spec_validator_cls=None)
            )
        return _OPENAPI


class GitHubEmulator(github.GitHubEmulator):
    """Start with `start()`; point PyGithub at `base_url`; inspect `comments`, `labels`, `check_runs`."""

    def start(self, host: str = "127.0.0.1", port: int = 0) -> GitHubEmulator:
        openapi()
        super().start(host, port)
        return self

    def _validate(self, request: Request, body: bytes) -> str | None:
        mock = MockRequest(
            GITHUB,
            request.method.lower(),
            self._validation_path(request),
            args=request.args,
            data=body or None,
            content_type=request.mimetype or "application/json",
            headers=dict(request.headers),
        )
        try:
            openapi().validate_request(mock)
        except Exception as error:  # any validation failure is reported to the test, not raised here
            detail = "; ".join(str(e)[:200] for e in getattr(error, "schema_errors", []) or [])
            return f"{type(error).__name__}: {error} {detail}".strip()
        return None
