"""Turning raw records into turns, and naming what is wrong with the ones that are not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import faust

from memstream.privacy import identifier_problems
from schemas.codec import HEADER_SIZE, AvroCodec
from schemas.errors import DecodeError
from schemas.turns import MAX_FUTURE, Turn, problems, received_at


@dataclass(frozen=True, slots=True)
class Decoded:
    """An accepted turn, the event it came in (for acks and dead letters), its token count."""

    turn: Turn
    event: faust.EventT[bytes]
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class Rejected:
    event: faust.EventT[bytes]
    reason: str
    error: str


def decode_events(
    events: Sequence[faust.EventT[bytes]], *, codec: AvroCodec, max_content_chars: int
) -> tuple[list[Decoded], list[Rejected]]:
    """Split a batch into acceptable turns and rejects with their reasons."""
    good: list[Decoded] = []
    bad: list[Rejected] = []
    now = datetime.now(UTC)
    for event in events:
        message = event.message
        raw = message.value
        try:
            record = codec.decode(raw if isinstance(raw, bytes) else None)
        except DecodeError as exc:
            bad.append(Rejected(event, exc.reason, "DecodeError"))
            continue
        # Twice the gateway's allowance for a future event time: the clocks of two machines.
        found = problems(record, max_content_chars=max_content_chars, now=now, max_future=2 * MAX_FUTURE)
        # An identifier carrying a secret is refused, as at the gateway (ids are never rewritten).
        found += [message for _, message in identifier_problems(record)]
        if found:
            bad.append(Rejected(event, "; ".join(found), "ValidationError"))
            continue
        schema_id = int.from_bytes(raw[1:HEADER_SIZE], "big") if isinstance(raw, bytes) else 0
        good.append(
            Decoded(
                Turn.from_record(
                    record,
                    schema_id=schema_id,
                    topic=message.topic,
                    partition=message.partition,
                    offset=message.offset,
                    received_at=received_at(message.timestamp, now=now),
                ),
                event,
            )
        )
    return good, bad
