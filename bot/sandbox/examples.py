"""GitHub's own examples, as the stand-in answers and the sandbox delivers them: the REST API's
response examples and the webhook payload examples that the stand-in and the payload builders
start from, copied into ``github_examples.json`` so that neither npm nor the network is needed.

They come from the npm packages ``@octokit/openapi`` (GitHub's REST description) and
``@octokit/webhooks-examples`` (MIT licensed), at the versions ``tests/support/fetch_github_data.sh``
pins; ``tests/support/github_data.py`` writes the file (``python -m tests.support.github_data
--vendor``) and a test fails when it no longer matches those packages.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("github_examples.json")


@functools.cache
def _data() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return loaded


def rest_example(name: str) -> Any:
    """A deep copy of ``components.examples[name].value`` of GitHub's REST description."""
    return copy.deepcopy(_data()["rest"][name])


def webhook_example(event: str, action: str | None = None) -> dict[str, Any]:
    """A deep copy of the example payload of ``event`` (and ``action``) the builders start from."""
    key = f"{event}.{action}" if action else event
    found: dict[str, Any] = copy.deepcopy(_data()["webhooks"][key])
    return found


def sources() -> dict[str, str]:
    """The npm packages (name@version) the examples were copied from."""
    return dict(_data()["sources"])
