"""Narrow client-side workarounds for the embedded Tansu broker, used only when it is in use.

Faust is pointed at ``tansu://host:port`` instead of ``kafka://`` when the embedded
broker runs (``Settings.embedded_broker``); that scheme selects this transport, which
is Faust's aiokafka transport with these changes (see docs/embedded-broker.md):

- **Fetch wait.** Tansu holds a fetch request for its whole ``fetch_max_wait_ms`` even
  when records arrive meanwhile (a real Kafka broker answers as soon as
  ``fetch_min_bytes`` are there). Faust hard-codes 1,500 ms, so on Tansu a quiet
  topic delivered each turn 0-1.5 s late (p50 ~390 ms in a raw aiokafka probe, p50
  436 ms end to end at 100 turns/s); 50 ms brings the probe to ~3 ms. But an idle worker
  then asks 20 times a second, and each empty answer costs both sides: an idle ingest worker
  and the broker used 5.4 % and 7.3 % of a core doing nothing. :class:`TansuFetcher` waits
  ``FETCH_IDLE_WAIT_MS`` once no record came for ``FETCH_IDLE_AFTER_S``, and goes back to the
  short wait with the first record: 3.7 % and 1.9 % idle; the first turn after a quiet spell
  is stored about 60 ms later (p50 of 8, posted to stored: 89 → 145 ms), the ones after it
  are not (docs/embedded-broker.md).
- **End offsets** (docs/embedded-broker.md, bug 1). ListOffsets(latest) answers the base offset of the
  partition's last batch + 1 instead of its last offset + 1 (17 records sent as batches
  of 10 and 7: 11 instead of 17), so ``end_offsets``, ``seek_to_end`` and Faust's table
  recovery (which reads ``end_offsets``) stop short. The high watermark of a fetch
  response is right: :class:`TansuFetcher` replaces every such answer above 0 by the
  high watermark of a fetch at (answer - 1), the first record of that last batch.
- **A group per broker incarnation.** The embedded broker comes back from a restart empty,
  with a new cluster id (``ops/stack/broker.py``), and a worker that lived through the
  restart still commits the *old* log's offsets — into the new broker's copy of its group,
  before it notices the new cluster and restarts itself (``broker_reset.py``). The fresh
  worker then resumed from those offsets: beyond the new log's end (Tansu does not answer
  OffsetOutOfRange, so nothing reset them) or, worse, inside it, skipping its first records
  — every turn acknowledged on the new broker was lost (measured: 340 of 340). So on the
  embedded broker the consumer group is named after the cluster the worker joined
  (``<app id>@<cluster id>``): no process that knew an older log can commit into it.
- **Leaving the group** (docs/embedded-broker.md, bug 2). Tansu numbers a group's first generation 0
  (Kafka starts at 1) and aiokafka sends LeaveGroup only when the generation is above 0,
  so a worker stopped cleanly in generation 0 stayed a member until its session timed
  out, and the next worker's join waited that long. :class:`TansuGroupCoordinator`
  leaves in generation 0 too.

:class:`TansuKafkaConsumer` carries the last two; ``consumer_class(embedded)`` picks it
for any aiokafka consumer of ours, so a real Kafka cluster always gets aiokafka as it is.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import aiokafka
from aiokafka import errors as kafka_errors
from aiokafka.consumer.fetcher import Fetcher
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.protocol.fetch import FetchRequest
from aiokafka.protocol.group import LeaveGroupRequest
from aiokafka.protocol.offset import OffsetResetStrategy
from aiokafka.structs import TopicPartition
from faust.transport import drivers
from faust.transport.drivers import aiokafka as faust_aiokafka

log = logging.getLogger(__name__)

SCHEME = "tansu"
FETCH_MAX_WAIT_MS = 50
#: The fetch wait once no record came for ``FETCH_IDLE_AFTER_S`` (``TansuFetcher``).
FETCH_IDLE_WAIT_MS = 250
FETCH_IDLE_AFTER_S = 5.0


async def fetched_high_watermarks(
    client: Any, node_id: int, at: Mapping[TopicPartition, int], *, isolation_level: int, max_bytes: int
) -> dict[TopicPartition, int]:
    """The high watermark of each partition, from one fetch at the given (existing) offsets.

    The fetch waits at most 1 ms and needs no minimum size: a real Kafka answers it at once;
    Tansu answers a 0 ms fetch with no partitions at all, and a 1 ms one with the records."""
    by_topic: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for tp, offset in at.items():
        by_topic[tp.topic].append((tp.partition, offset, max_bytes))
    request = FetchRequest(1, 0, max_bytes, isolation_level, list(by_topic.items()))
    response = await client.send(node_id, request)
    found: dict[TopicPartition, int] = {}
    for topic, partitions in response.topics:
        for partition, error_code, highwater, *_ in partitions:
            tp = TopicPartition(topic, partition)
            error = kafka_errors.for_code(error_code)
            if error is not kafka_errors.NoError:
                raise error(f"fetching the high watermark of {tp}")
            found[tp] = int(highwater)
    if missing := set(at) - set(found):
        # Retriable: aiokafka asks again after its retry backoff.
        raise kafka_errors.RequestTimedOutError(f"no high watermark in the fetch response for {sorted(missing)}")
    return found


class TansuFetcher(Fetcher):  # type: ignore[misc]  # aiokafka ships no type information
    """aiokafka's fetcher, with ListOffsets(latest) answers corrected from a fetch's high
    watermark, and a longer fetch wait while nothing comes (module docstring, "Fetch wait").

    It becomes one after aiokafka built it (``_becoming``), so what it adds to aiokafka's
    state is made on first use: the wait it was built with, and when records last came."""

    async def _proc_fetch_request(self, assignment: Any, node_id: int, request: Any) -> bool:
        got: bool = await super()._proc_fetch_request(assignment, node_id, request)
        now = time.monotonic()
        state = self.__dict__
        busy_wait_ms: int = state.setdefault("_tansu_busy_wait_ms", state["_fetch_max_wait_ms"])
        if got or "_tansu_records_at" not in state:
            state["_tansu_records_at"] = now
            self._fetch_max_wait_ms = busy_wait_ms
        elif now - state["_tansu_records_at"] >= FETCH_IDLE_AFTER_S:
            self._fetch_max_wait_ms = max(busy_wait_ms, FETCH_IDLE_WAIT_MS)
        return got

    async def _proc_offset_request(
        self, node_id: int, topic_data: Mapping[str, list[tuple[int, int]]]
    ) -> dict[TopicPartition, tuple[int, int | None]]:
        offsets: dict[TopicPartition, tuple[int, int | None]] = await super()._proc_offset_request(node_id, topic_data)
        short = {
            tp: offsets[tp][0] - 1
            for topic, partitions in topic_data.items()
            for partition, timestamp in partitions
            if timestamp == OffsetResetStrategy.LATEST
            and (tp := TopicPartition(topic, partition)) in offsets
            and offsets[tp][0] > 0  # 0: an empty partition, which Tansu answers right
        }
        if short:
            ends = await fetched_high_watermarks(
                self._client, node_id, short, isolation_level=self._isolation_level,
                max_bytes=self._max_partition_fetch_bytes,
            )  # fmt: skip
            for tp, end in ends.items():
                offsets[tp] = (end, offsets[tp][1])
        return offsets


class TansuGroupCoordinator(GroupCoordinator):  # type: ignore[misc]
    """aiokafka's group coordinator, leaving the group in generation 0 as well."""

    async def _maybe_leave_group(self) -> None:
        # aiokafka leaves only when generation > 0 (its "no generation" is -1).
        if self.generation == 0 and self.member_id and self._group_instance_id is None:
            try:
                await self._send_req(LeaveGroupRequest(self.group_id, self.member_id))
            except kafka_errors.KafkaError as exc:
                log.error("LeaveGroup of %s (generation 0) failed: %s", self.group_id, exc)
            else:
                log.info("left group %s (generation 0)", self.group_id)
        await super()._maybe_leave_group()


def _becoming(attribute: str, original: type, replacement: type) -> property:
    """An attribute whose value, when it is exactly an ``original``, becomes a ``replacement``
    (a subclass that adds behaviour and no state) as it is assigned."""
    slot = f"_tansu{attribute}"

    def get(self: Any) -> Any:
        return self.__dict__.get(slot)

    def set_(self: Any, value: Any) -> None:
        if type(value) is original:
            value.__class__ = replacement
        self.__dict__[slot] = value

    return property(get, set_)


class TansuKafkaConsumer(aiokafka.AIOKafkaConsumer):  # type: ignore[misc]
    """aiokafka's consumer with the Tansu fetcher and group coordinator.

    aiokafka builds both inside ``start()`` from module-level classes it offers no way to
    replace; they become the Tansu classes the moment ``start()`` assigns them, before
    either sent a request (patching aiokafka's module would change every consumer in the
    process, including ones talking to a real Kafka)."""

    _fetcher = _becoming("_fetcher", Fetcher, TansuFetcher)
    _coordinator = _becoming("_coordinator", GroupCoordinator, TansuGroupCoordinator)


def adopt(consumer: aiokafka.AIOKafkaConsumer) -> TansuKafkaConsumer:
    """Turn a consumer built by someone else (Faust) into a TansuKafkaConsumer; before it starts."""
    if consumer._fetcher is not None:
        raise RuntimeError("adopt a consumer before it starts")
    consumer.__class__ = TansuKafkaConsumer
    return consumer  # type: ignore[no-any-return]


def consumer_class(embedded: bool) -> type[aiokafka.AIOKafkaConsumer]:
    """The aiokafka consumer to use: the Tansu one only on the embedded broker."""
    return TansuKafkaConsumer if embedded else aiokafka.AIOKafkaConsumer


def incarnation_group(group: str, cluster_id: str) -> str:
    """The consumer group of ``group`` on one incarnation (cluster id) of the embedded broker."""
    return f"{group}@{cluster_id}"


class TansuConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    #: The cluster id of the broker this process joined (``register_transport``); None leaves
    #: the group named after the app alone.
    cluster_id: str | None = None

    def _create_worker_consumer(self, transport: Any) -> aiokafka.AIOKafkaConsumer:
        consumer = adopt(super()._create_worker_consumer(transport))
        # aiokafka hands this to its Fetcher in start(); Faust offers no setting for it.
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        if self.cluster_id is not None:  # read by aiokafka in start(), for joins and commits alike
            consumer._group_id = incarnation_group(consumer._group_id, self.cluster_id)
        return consumer


class TansuConsumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self) -> faust_aiokafka.AIOKafkaConsumerThread:
        return TansuConsumerThread(self, loop=self.loop, beacon=self.beacon)


class TansuTransport(faust_aiokafka.Transport):
    Consumer = TansuConsumer


def register_transport(*, cluster_id: str | None = None) -> None:
    """Make ``tansu://`` broker URLs resolve to :class:`TansuTransport`, whose consumer group
    is named after ``cluster_id`` (the broker this process joined); idempotent."""
    drivers.TRANSPORTS.aliases[SCHEME] = f"{__name__}:TansuTransport"
    TansuConsumerThread.cluster_id = cluster_id
