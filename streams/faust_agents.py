"""The Faust agents: which topic each consumes, how it decodes a batch and what it does with it.

Every agent runs the same loop (``streams/consume.py``); what differs is here, one function
each. The sink stages they write through live in ``streams/stages/``.

- ingest worker: ``ingest`` (turns → event log, episodes, session buffers);
- long-term memory worker: ``turns`` (turns → fact extraction, skills and lessons), ``facts``
  (facts → semantic memory and the graph), ``summaries`` (compaction requests → rolling
  summaries) and ``retries`` (parked turns → fact extraction, once due).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

import faust

from schemas.codec import AvroCodec
from sinks.redis.buffer import SessionRef
from streams.consume import Consumer, Events, consume
from streams.deadletter import decode_or_dead_letter
from streams.decoding import Decoded, decode_events
from streams.defects import Defects
from streams.parking import wait_until_due
from streams.resources import MemoryResources
from streams.retry import retry_until_done
from streams.stages.base import SinkStage, StageContext, decode_turns, fan_out, redact_batch, write_timed
from streams.stages.facts import apply_batch, decode_fact
from streams.stages.summaries import fold_session

log = logging.getLogger(__name__)

#: How many compaction requests one summaries batch takes (each may mean an LLM call).
SUMMARY_BATCH = 100


def register(app: faust.App, topic: faust.TopicT, consumer: Consumer[Any], defects: Defects) -> faust.types.AgentT:  # type: ignore[type-arg]
    """``consumer`` as the Faust agent ``<app id>.<consumer name>`` of ``topic``."""

    async def agent(stream: faust.StreamT[bytes]) -> None:
        # Agents receive faust.Stream, whose take_events() StreamT does not declare.
        await consume(cast(faust.Stream[bytes], stream), consumer, defects)

    return app.agent(topic, name=f"{app.conf.id}.{consumer.name}")(agent)


def turns(name: str, stages: Sequence[SinkStage], ctx: StageContext) -> Consumer[Decoded]:
    """Turns, decoded and filtered once, written to every stage concurrently."""

    async def decode(events: Events) -> list[Decoded]:
        return await decode_turns(events, ctx)

    async def handle(batch: list[Decoded]) -> None:
        await fan_out(batch, stages, ctx)

    return Consumer(name, decode, handle, ctx.max_events, ctx.within_s)


def retries(stage: SinkStage, ctx: StageContext) -> Consumer[Decoded]:
    """Parked turns, extracted again once their time has come (in the order parked)."""

    async def decode(events: Events) -> list[Decoded]:
        good, bad = decode_events(events, codec=ctx.codec, max_content_chars=ctx.max_content_chars)
        for rejected in bad:  # parked from a good turn, so only a broken record lands here
            await ctx.dead_letters.send(rejected.event, reason=rejected.reason, error=rejected.error, stage="retry")
        return await redact_batch(good, ctx) if good else []

    async def handle(batch: list[Decoded]) -> None:
        await wait_until_due(batch)
        log.info("re-extracting %d parked turn(s)", len(batch))
        await write_timed(stage, batch, ctx)

    return Consumer("retries", decode, handle, ctx.max_events, ctx.within_s)


def facts(resources: MemoryResources, codec: AvroCodec, ctx: StageContext) -> Consumer[dict[str, Any]]:
    """Extracted facts, embedded and applied to semantic memory and the graph."""

    async def decode(events: Events) -> list[dict[str, Any]]:
        return await decode_or_dead_letter(events, lambda raw: decode_fact(codec, raw), ctx.dead_letters, stage="facts")

    async def handle(records: list[dict[str, Any]]) -> None:
        await apply_batch(resources, records, resources.backoff)

    return Consumer("facts", decode, handle, ctx.max_events, ctx.within_s)


def summaries(resources: MemoryResources, codec: AvroCodec, ctx: StageContext) -> Consumer[dict[str, Any]]:
    """Compaction requests: each session named is folded into its rolling summary."""

    async def decode(events: Events) -> list[dict[str, Any]]:
        return await decode_or_dead_letter(events, codec.decode, ctx.dead_letters, stage="summaries")

    async def handle(requests: list[dict[str, Any]]) -> None:
        # A v1 request names no user: it was for a buffer of before buffers were per user.
        refs = {
            SessionRef(str(r["tenant_id"]), str(r["user_id"]), str(r["session_id"])): None
            for r in requests
            if r.get("user_id")
        }
        for ref in refs:

            async def fold(ref: SessionRef = ref) -> int:
                return await fold_session(resources, ref)

            where = f"{ref.tenant_id}/{ref.user_id}/{ref.session_id}"
            await retry_until_done(fold, what="session summary", backoff=resources.backoff, where=where)

    return Consumer("summaries", decode, handle, SUMMARY_BATCH, ctx.within_s)
