"""What a worker measures about its flow through Kafka: records in, processed and out per
topic, how long processing took, and its consumer group's lag per partition.

The counts and latencies come from Faust's sensor hooks, so every agent is measured the
same way without code of its own. Lag is measured every ``MEMSTREAM_CONSUMER_LAG_INTERVAL_S``:
end offset - committed offset per assigned partition, where the end offset is the high
watermark of the partition's last fetch response (right on the embedded broker too, whose
ListOffsets(latest) answer is short, docs/embedded-broker.md, bug 1), or, before a first fetch, the
consumer's ``end_offsets`` (corrected on the embedded broker by ``streams/tansu.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import faust
from aiokafka.errors import KafkaError
from faust.exceptions import ConsumerNotStarted
from faust.types import TP, Message
from faust.types.transports import ConsumerT, ProducerT
from faust.types.tuples import PendingMessage, RecordMetadata

from streams.metrics import WorkerMetrics

log = logging.getLogger(__name__)


class FlowSensor(faust.Sensor):
    """Counts records in, processed and out per topic; times each record through the worker."""

    def __init__(self, metrics: WorkerMetrics, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.metrics = metrics

    def on_message_in(self, tp: TP, offset: int, message: Message) -> None:
        self.metrics.events_in.labels(topic=tp.topic).inc()
        if message.time_in is None:  # Faust's own monitor stamps it too, on the same clock
            message.time_in = time.monotonic()

    def on_message_out(self, tp: TP, offset: int, message: Message) -> None:
        """Every agent acknowledged the record: it is processed and will be committed."""
        topic = tp.topic
        self.metrics.events_processed.labels(topic=topic).inc()
        if message.time_in is not None:
            self.metrics.processing_seconds.labels(topic=topic).observe(max(0.0, time.monotonic() - message.time_in))
        if message.timestamp:
            self.metrics.event_age_seconds.labels(topic=topic).observe(max(0.0, time.time() - message.timestamp))

    def on_send_initiated(
        self, producer: ProducerT, topic: str, message: PendingMessage, keysize: int, valsize: int
    ) -> str:
        return topic

    def on_send_completed(self, producer: ProducerT, state: Any, metadata: RecordMetadata) -> None:
        self.metrics.events_out.labels(topic=metadata.topic).inc()

    def on_send_error(self, producer: ProducerT, exc: BaseException, state: Any) -> None:
        self.metrics.send_errors.labels(topic=str(state)).inc()


@dataclass(frozen=True)
class PartitionOffsets:
    topic: str
    partition: int
    #: The offset the next record published to the partition will get.
    end: int
    #: The offset the group reads next; 0 when the group never committed one (it starts
    #: from the earliest record, ``auto_offset_reset=earliest``).
    committed: int

    @property
    def lag(self) -> int:
        return max(0, self.end - self.committed)


def partition_offsets(ends: Mapping[TP, int], committed: Mapping[TP, int | None]) -> list[PartitionOffsets]:
    """Offsets and lag of each partition with a known end (a committed offset below 0 or
    missing means none was committed)."""
    out = []
    for tp, end in sorted(ends.items()):
        done = committed.get(tp)
        out.append(PartitionOffsets(tp.topic, tp.partition, end, done if done is not None and done >= 0 else 0))
    return out


class ConsumerLag:
    """Measures the lag of one Faust app's consumer group on the partitions it holds."""

    def __init__(self, app: faust.App, metrics: WorkerMetrics) -> None:
        self.app = app
        self.metrics = metrics
        self.group = str(app.conf.id)
        self._exported: set[tuple[str, int]] = set()

    async def measure(self) -> list[PartitionOffsets]:
        consumer = self.app.consumer
        try:
            ends = await self._end_offsets(consumer)
        except (ConsumerNotStarted, KafkaError) as exc:
            log.debug("consumer lag not measured: %s: %s", type(exc).__name__, exc)
            return []
        # Faust keeps the committed offset per partition it holds (what it sought to when the
        # partition was assigned, then each commit of its own) and offers no public accessor.
        committed: Mapping[TP, int | None] = getattr(consumer, "_committed_offset", {})
        offsets = partition_offsets(ends, committed)
        for o in offsets:
            labels = (self.group, o.topic, str(o.partition))
            self.metrics.end_offset.labels(*labels).set(o.end)
            self.metrics.committed_offset.labels(*labels).set(o.committed)
            self.metrics.lag.labels(*labels).set(o.lag)
        held = {(o.topic, o.partition) for o in offsets}
        self.metrics.forget_partitions(self.group, self._exported - held)
        self._exported = held
        return offsets

    @staticmethod
    async def _end_offsets(consumer: ConsumerT) -> dict[TP, int]:
        ends: dict[TP, int] = {}
        unknown: list[TP] = []
        for tp in consumer.assignment():
            try:
                highwater = consumer.highwater(tp)
            except AssertionError:  # aiokafka's "Partition is not assigned": revoked meanwhile
                continue
            if highwater is None:
                unknown.append(tp)
            else:
                ends[tp] = highwater
        if unknown:  # not fetched yet: ask the broker (ListOffsets, corrected on Tansu)
            ends.update(await consumer.highwaters(*unknown))
        return ends


def install(app: faust.App, metrics: WorkerMetrics, *, lag_interval_s: float) -> ConsumerLag:
    """Count and time the app's records through ``metrics`` and measure its lag periodically."""
    app.sensors.add(FlowSensor(metrics))
    lag = ConsumerLag(app, metrics)

    async def measure_lag() -> None:
        await lag.measure()

    app.timer(interval=lag_interval_s)(measure_lag)
    return lag
