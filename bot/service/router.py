"""Route a delivery to the one pipeline of its event's kind, after parsing its payload once
(`bot.service.events`). There is no second handler of an event, so nothing depends on an order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import events
from .events import Event, MalformedPayload


@dataclass(frozen=True)
class Pipeline:
    """What the bot does on one kind of event: ``wants`` is a cheap test of the parsed event (so
    that the intake does not store and queue what would be ignored), ``handle`` does it."""

    wants: Callable[[Any], bool]
    handle: Callable[[Any, Any], None]
    # Its work is a few rows of the store and nothing else (no GitHub call, no wait): a job may do
    # it in the transaction that takes the delivery's lease (`bot.service.jobs`).
    brief: bool = False


class Router:
    """The pipelines by event kind; ``parse`` and ``kinds`` (the GitHub event names, and the kind of
    event each is parsed into) are `bot.service.events`' unless a test brings its own."""

    def __init__(
        self,
        pipelines: Mapping[type, Pipeline],
        *,
        parse: Callable[[str, dict], Any] = events.parse,
        kinds: Mapping[str, type] | None = None,
    ):
        self._pipelines = dict(pipelines)
        self._kinds = dict(kinds) if kinds is not None else {name: k.type for name, k in events.KINDS.items()}
        self._parse = parse

    def events(self) -> set[str]:
        """Every GitHub event some pipeline acts on (what the App subscribes to)."""
        return {name for name, kind in self._kinds.items() if kind in self._pipelines}

    def accept(self, event: str, payload: dict) -> Event | None:
        """The parsed event when a pipeline wants the delivery, else None; `MalformedPayload`
        when the payload of an event it acts on does not have GitHub's shape."""
        parsed = self._parse(event, payload)
        if parsed is None:
            return None
        pipeline = self._pipelines[type(parsed)]
        return parsed if pipeline.wants(parsed) else None

    def wants(self, event: str, payload: dict) -> bool:
        try:
            return self.accept(event, payload) is not None
        except MalformedPayload:
            return False

    def brief(self, event: str) -> bool:
        """Whether the pipeline of ``event`` is a brief one (`Pipeline.brief`)."""
        pipeline = self._pipelines.get(self._kinds.get(event))  # type: ignore[arg-type]
        return pipeline is not None and pipeline.brief

    def dispatch(self, event: str, payload: dict, services: Any) -> bool:
        """Run the event's pipeline; whether one ran. `MalformedPayload` propagates."""
        parsed = self.accept(event, payload)
        if parsed is None:
            return False
        self._pipelines[type(parsed)].handle(parsed, services)
        return True
