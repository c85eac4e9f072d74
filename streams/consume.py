"""The one consume loop every Faust agent runs: take a batch, decode it (dead-lettering what
cannot be read), handle it, and only then acknowledge it.

Acknowledging after the handler means a crash anywhere is redelivery, never loss (every sink
is idempotent, keyed by event id). The handler retries a store that is down for as long as
it takes (``streams/retry.py``); a code defect — the same non-transient error
``defect_attempts`` times — stops the worker loudly with the batch unacknowledged
(``streams/defects.py``), so the restarted worker consumes it again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import faust

from streams.defects import CodeDefectError, Defects, first_defect

T = TypeVar("T")
Events = Sequence[faust.EventT[bytes]]


@dataclass(frozen=True)
class Consumer(Generic[T]):
    """What one Faust agent does with a batch of its topic."""

    #: The agent's name (in logs and in the record of a code defect).
    name: str
    #: The batch's records that can be read; the others go to the dead-letter topic.
    decode: Callable[[Events], Awaitable[list[T]]]
    #: Write them (idempotently, retrying what is transient); called only with records.
    handle: Callable[[list[T]], Awaitable[None]]
    max_events: int
    within_s: float


async def consume(stream: faust.Stream[bytes], consumer: Consumer[T], defects: Defects) -> None:
    await defects.look()
    async for events in stream.take_events(consumer.max_events, consumer.within_s):
        try:
            if records := await consumer.decode(events):
                await consumer.handle(records)
        except* CodeDefectError as group:
            await defects.stop_worker(first_defect(group), consumer=consumer.name)
        for event in events:
            await stream.ack(event)
        await defects.batch_done(consumer.name)
