"""Route a webhook (event, action) to the handlers registered for it, bedevere-style but sync."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

Handler = Callable[[dict, Any], None]


class Router:
    """Handlers keyed by (event, action); ``action=None`` means every action of the event."""

    def __init__(self, *routers: Router):
        self._handlers: dict[tuple[str, str | None], list[Handler]] = defaultdict(list)
        for other in routers:
            for key, handlers in other._handlers.items():
                self._handlers[key].extend(handlers)

    def register(self, event: str, action: str | None = None) -> Callable[[Handler], Handler]:
        def add(handler: Handler) -> Handler:
            self._handlers[(event, action)].append(handler)
            return handler

        return add

    def handlers(self, event: str, action: str | None) -> list[Handler]:
        found = list(self._handlers.get((event, None), ()))
        if action is not None:
            found += self._handlers.get((event, action), ())
        return found

    def wants(self, event: str, action: str | None) -> bool:
        return bool(self.handlers(event, action))

    def dispatch(self, event: str, payload: dict, services: Any) -> int:
        """Run every matching handler; the number that ran."""
        handlers = self.handlers(event, payload.get("action"))
        for handler in handlers:
            handler(payload, services)
        return len(handlers)
