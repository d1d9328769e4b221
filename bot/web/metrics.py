"""Prometheus metrics: intake counters in this process, delivery and queue state from storage."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from bot.service.ports.queue import Queue
from bot.service.ports.store import Store


class Metrics:
    def __init__(self, store: Store, queue: Queue):
        self.registry = CollectorRegistry()
        self.deliveries = Counter(
            "perfbot_webhook_deliveries", "Webhook deliveries by outcome", ["outcome"], registry=self.registry
        )
        self.intake_seconds = Histogram(
            "perfbot_webhook_intake_seconds",
            "Time to answer a webhook",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5),
            registry=self.registry,
        )
        self.registry.register(_StateCollector(store, queue))


class _StateCollector:
    """Read at scrape time, so the numbers hold across processes and replicas."""

    def __init__(self, store: Store, queue: Queue):
        self.store, self.queue = store, queue

    def collect(self) -> Iterator[GaugeMetricFamily]:
        deliveries = GaugeMetricFamily("perfbot_deliveries", "Stored deliveries by status", labels=["status"])
        for status, count in sorted(self.store.deliveries.counts().items()):
            deliveries.add_metric([status], count)
        yield deliveries
        yield GaugeMetricFamily(
            "perfbot_queue_pending", "Jobs waiting in the queue", value=self.queue.pending()
        )
