"""Build signed webhook deliveries the way GitHub sends them."""

from __future__ import annotations

import json
import uuid

from bot.web.signature import sign

SECRET = "It's a Secret to Everybody"


def headers(
    event: str,
    body: bytes,
    *,
    guid: str | None = None,
    secret: str = SECRET,
    hook_id: str = "4242",
    content_type: str = "application/json",
) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": guid or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": hook_id,
        "X-Hub-Signature-256": sign(secret, body),
        "User-Agent": "GitHub-Hookshot/perfbot-tests",
        "Content-Type": content_type,
    }


def deliver(client, event: str, payload: dict | bytes, **kw):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return client.post("/webhook", data=body, headers=headers(event, body, **kw))
