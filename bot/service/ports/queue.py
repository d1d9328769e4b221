"""The queue that carries stored deliveries to the consumers (`Queue`): the intake enqueues, the
sweep enqueues again what was lost, `/healthz` and `/metrics` ask how it fares."""

from __future__ import annotations

from abc import ABC, abstractmethod


class Queue(ABC):
    @abstractmethod
    def enqueue(self, delivery_id: int) -> None: ...

    @abstractmethod
    def pending(self) -> int:
        """Jobs waiting to be taken (not those running)."""

    @abstractmethod
    def ping(self) -> None:
        """Raise when the queue cannot be reached."""
