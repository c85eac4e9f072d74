"""When memstream received a turn (``schemas.turns.received_at``): what erasure and consent
are ordered against. It comes from the record's Kafka time, never from ``event_time``, and
every re-publication keeps the original's (issue 45, finding 4)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import faust
import pytest
from faust.types import AppT
from faust.types.tuples import Message

from memstream.kafka_security import KafkaSecurity
from ops import dlq
from schemas.codec import turn_event_codec
from schemas.topics import DLQ_SOURCE_TOPIC, TURNS
from schemas.turns import received_at
from streams.deadletter import DeadLetters
from streams.decoding import decode_events
from streams.parking import RetryParking
from tests.unit.test_turn_rules import record

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def test_the_records_time_is_when_it_was_received() -> None:
    assert received_at((NOW - timedelta(minutes=3)).timestamp(), now=NOW) == NOW - timedelta(minutes=3)


def test_a_record_dated_ahead_of_its_reader_was_received_by_now() -> None:
    assert received_at((NOW + timedelta(minutes=4, seconds=30)).timestamp(), now=NOW) == NOW


@pytest.mark.parametrize("timestamp", [None, 0, -1.0])
def test_a_record_without_a_time_has_no_known_arrival(timestamp: float | None) -> None:
    assert received_at(timestamp, now=NOW) is None


def event(value: bytes, *, timestamp: float) -> faust.EventT[bytes]:
    message = Message(
        topic=TURNS, partition=1, offset=7, timestamp=timestamp, timestamp_type=0, headers=None,
        key=b"k", value=value, checksum=None,
    )  # fmt: skip
    return faust.Event(cast(AppT, None), b"k", value, None, message)


def test_a_decoded_turn_is_received_at_its_records_time_whatever_its_event_time() -> None:
    sent = datetime.now(UTC) - timedelta(seconds=2)
    ahead = datetime.now(UTC) + timedelta(minutes=4)
    [decoded], rejected = decode_events(
        [event(turn_event_codec().encode(record(event_time=ahead)), timestamp=sent.timestamp())],
        codec=turn_event_codec(),
        max_content_chars=10_000,
    )
    assert rejected == []
    assert decoded.turn.event_time == ahead
    assert decoded.turn.received_at is not None
    assert abs(decoded.turn.received_at - sent) < timedelta(milliseconds=1)


@dataclass
class Topic:
    """A Faust topic that keeps what is sent to it."""

    sent: list[dict[str, Any]] = field(default_factory=list)

    async def send(self, **kwargs: Any) -> Any:
        self.sent.append(kwargs)

        async def ack() -> None:
            return None

        return ack()


async def test_a_dead_letter_and_a_parked_turn_keep_the_originals_time() -> None:
    original = event(b"\x00bytes", timestamp=(NOW - timedelta(hours=1)).timestamp())
    dead, parked = Topic(), Topic()
    await DeadLetters(cast(faust.TopicT, dead)).send(original, reason="r", error="E", stage="s")

    @dataclass
    class Item:
        event: faust.EventT[bytes]
        turn: Any = field(default_factory=lambda: type("T", (), {"event_id": uuid.uuid4()})())

    await RetryParking(cast(faust.TopicT, parked), base_delay_s=1).park([Item(original)], reason="down")  # type: ignore[list-item]
    assert [s["timestamp"] for s in dead.sent + parked.sent] == [original.message.timestamp] * 2


async def test_a_replayed_dead_letter_keeps_the_originals_time(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []

    class Producer:
        def __init__(self, **kwargs: Any) -> None:
            pass

        async def start(self) -> None:
            pass

        async def stop(self) -> None:
            pass

        async def send(self, topic: str, **kwargs: Any) -> Any:
            sent.append(kwargs)

            async def ack() -> None:
                return None

            return ack()

    monkeypatch.setattr(dlq, "AIOKafkaProducer", Producer)
    letter = dlq.DeadLetter(0, 3, b"k", b"v", {DLQ_SOURCE_TOPIC: TURNS}, timestamp_ms=1_700_000_000_123)
    await dlq.replay_dead_letters("k:9092", [letter], security=KafkaSecurity())
    assert [s["timestamp_ms"] for s in sent] == [1_700_000_000_123]
