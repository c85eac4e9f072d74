"""The loop every sink agent runs: take a batch, decode, write (retrying), then acknowledge.

Events are acknowledged only after their batch is durably written (or dead-lettered),
so a crash at any point means redelivery, never loss; the sinks are idempotent, so
redelivery never means duplicates.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import faust

from schemas.codec import AvroCodec
from streams.deadletter import DeadLetters
from streams.decoding import Decoded, decode_events
from streams.retry import Backoff, EventRejectedError, retry_until_done

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StageContext:
    codec: AvroCodec
    dead_letters: DeadLetters
    backoff: Backoff
    max_events: int
    within_s: float
    max_content_chars: int


class SinkStage(ABC):
    """One fan-out branch of the turns topic."""

    #: Short name used in logs and in the DLQ's ``stage`` header.
    name: str
    #: Exactly one stage dead-letters undecodable records, so each lands in the DLQ once.
    owns_rejects: bool = False

    @abstractmethod
    async def write(self, batch: Sequence[Decoded]) -> None:
        """Write the batch idempotently; raise to have it retried (or isolated)."""


def _where(batch: Sequence[Decoded]) -> str:
    first, last = batch[0].turn, batch[-1].turn
    return f"{first.topic}[{first.partition}]@{first.offset}..[{last.partition}]@{last.offset}"


async def write_isolating(stage: SinkStage, batch: Sequence[Decoded], ctx: StageContext) -> None:
    """Write the batch; if a store rejects an event's data, find it and dead-letter it alone."""
    try:
        await retry_until_done(
            lambda: stage.write(batch), what=f"{stage.name} sink", backoff=ctx.backoff, where=_where(batch)
        )
        return
    except EventRejectedError as exc:
        if len(batch) == 1:
            await ctx.dead_letters.send(batch[0].event, reason=str(exc), error="EventRejected", stage=stage.name)
            return
        log.warning("%s sink rejected a batch of %d (%s); writing one by one", stage.name, len(batch), exc)
    for item in batch:
        await write_isolating(stage, [item], ctx)


async def run_stage(stream: faust.StreamT[bytes], stage: SinkStage, ctx: StageContext) -> None:
    async for events in stream.take_events(ctx.max_events, ctx.within_s):
        good, bad = decode_events(events, codec=ctx.codec, max_content_chars=ctx.max_content_chars)
        if bad and stage.owns_rejects:
            for rejected in bad:
                await ctx.dead_letters.send(
                    rejected.event, reason=rejected.reason, error=rejected.error, stage="decode"
                )
        if good:
            await write_isolating(stage, good, ctx)
        for event in events:
            await stream.ack(event)
