"""Route a webhook (event, action) to the handlers registered for it, bedevere-style but sync."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

Handler = Callable[[dict, Any], None]
Predicate = Callable[[dict], bool]


class Router:
    """Handlers keyed by (event, action); ``action=None`` means every action of the event. A handler
    registered ``when=`` a predicate of the payload only wants the deliveries it accepts (a cheap
    test, so that the intake does not store and queue what no handler would act on)."""

    def __init__(self, *routers: Router):
        self._handlers: dict[tuple[str, str | None], list[tuple[Handler, Predicate | None]]]
        self._handlers = defaultdict(list)
        for other in routers:
            for key, handlers in other._handlers.items():
                self._handlers[key].extend(handlers)

    def register(self, event: str, action: str | None = None,
                 when: Predicate | None = None) -> Callable[[Handler], Handler]:
        def add(handler: Handler) -> Handler:
            self._handlers[(event, action)].append((handler, when))
            return handler

        return add

    def handlers(self, event: str, action: str | None, payload: dict | None = None) -> list[Handler]:
        """The handlers of (event, action); with ``payload``, only those that want it."""
        found = list(self._handlers.get((event, None), ()))
        if action is not None:
            found += self._handlers.get((event, action), ())
        return [handler for handler, when in found if payload is None or when is None or when(payload)]

    def wants(self, event: str, action: str | None, payload: dict | None = None) -> bool:
        return bool(self.handlers(event, action, payload))

    def events(self) -> set[str]:
        """Every event some handler is registered for."""
        return {event for event, _ in self._handlers}

    def dispatch(self, event: str, payload: dict, services: Any) -> int:
        """Run every matching handler; the number that ran."""
        handlers = self.handlers(event, payload.get("action"), payload)
        for handler in handlers:
            handler(payload, services)
        return len(handlers)
