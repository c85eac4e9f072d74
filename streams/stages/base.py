"""What every sink stage shares: the context, the base class, and how a batch of turns
reaches them.

A batch of the turns topic is decoded once, what cannot be read is dead-lettered, the rest
goes through the privacy filter, and then to every stage concurrently (each retrying on
its own); only then is the batch acknowledged (``streams/consume.py``). A crash at any point
therefore means redelivery, never loss; the stages are idempotent, so redelivery never means
duplicates.

Why one Faust agent with in-process fan-out rather than one Faust agent per sink:
Faust spends ~110 µs on every event of every stream (docs/benchmarks.md). Three Faust agents on the
turns topic paid that three times (and decoded three times): 1,590 turns/s end to
end, against 2,450 with this design and the same sinks (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import faust

from memstream.privacy import (
    PERSONAL_IDENTIFIER_FIELDS,
    PrivacyPolicy,
    TurnText,
    grown_past_limits,
    identifier_problems,
    redact_turn,
)
from memstream.tokens import TokenCounter
from schemas.codec import AvroCodec, turn_event_codec
from schemas.turns import Turn
from sinks.postgres.tenant_settings import PolicyCache
from streams.deadletter import DeadLetters
from streams.decoding import Decoded, decode_events
from streams.metrics import WorkerMetrics
from streams.resources import PipelineResources
from streams.retry import Backoff, EventRejectedError, retry_until_done

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StageContext:
    codec: AvroCodec
    tokens: TokenCounter
    policies: PolicyCache
    metrics: WorkerMetrics
    dead_letters: DeadLetters
    backoff: Backoff
    max_events: int
    within_s: float
    max_content_chars: int
    #: Exactly one consumer group dead-letters undecodable turns (the ingest worker's).
    dead_letter_rejects: bool = True

    @classmethod
    def of(
        cls,
        resources: PipelineResources,
        dead_letters: DeadLetters,
        *,
        codec: AvroCodec | None = None,
        dead_letter_rejects: bool = True,
    ) -> StageContext:
        """The context of a worker's (or a replay's) stages, from its resources and settings."""
        settings = resources.settings
        return cls(
            codec=codec or turn_event_codec(), tokens=resources.tokens, policies=resources.policies,
            metrics=resources.metrics, dead_letters=dead_letters, backoff=resources.backoff,
            max_events=settings.batch_max_events, within_s=settings.batch_within_s,
            max_content_chars=settings.max_content_chars, dead_letter_rejects=dead_letter_rejects,
        )  # fmt: skip


class SinkStage(ABC):
    """One fan-out branch of the turns topic (one module per stage in ``streams/stages``)."""

    #: Short name used in logs and in the DLQ's ``stage`` header.
    name: str

    @abstractmethod
    async def write(self, batch: Sequence[Decoded]) -> None:
        """Write the batch idempotently; raise to have it retried (or isolated)."""


def _where(batch: Sequence[Decoded]) -> str:
    first, last = batch[0].turn, batch[-1].turn
    return f"{first.topic}[{first.partition}]@{first.offset}..[{last.partition}]@{last.offset}"


async def write_timed(stage: SinkStage, batch: Sequence[Decoded], ctx: StageContext) -> None:
    """``write_isolating``, timed into ``memstream_stage_seconds{stage}``."""
    started = time.monotonic()
    try:
        await write_isolating(stage, batch, ctx)
    finally:
        ctx.metrics.stage_seconds.labels(stage=stage.name).observe(time.monotonic() - started)


async def write_isolating(stage: SinkStage, batch: Sequence[Decoded], ctx: StageContext) -> None:
    """Write the batch; if a store rejects an event's data, find it and dead-letter it alone."""
    if not batch:  # every turn of it refused by the filter
        return
    try:
        await retry_until_done(
            lambda: stage.write(batch),
            what=f"{stage.name} sink",
            backoff=ctx.backoff,
            where=_where(batch),
        )
        return
    except EventRejectedError as exc:
        if len(batch) == 1:
            await ctx.dead_letters.send(batch[0].event, reason=str(exc), error="EventRejected", stage=stage.name)
            return
        log.warning("%s sink rejected a batch of %d (%s); writing one by one", stage.name, len(batch), exc)
    for item in batch:
        await write_isolating(stage, [item], ctx)


async def redact_batch(batch: Sequence[Decoded], ctx: StageContext) -> list[Decoded]:
    """The privacy filter on every free-text field (content, tool name, tags, metadata keys
    and values), with each tenant's policy (the gateway ran it too, but agents may produce to
    Kafka directly; a turn whose identifier carries a secret was dead-lettered by
    ``decode_events``). Turns with nothing to redact are kept as they are. A turn is
    dead-lettered, never truncated, when redaction makes a field longer than the turn
    contract allows, or when an identifier is or contains personal data the tenant's policy
    redacts (as the gateway refuses both). A batch of more than ``OFF_LOOP_CHARS`` of text is
    filtered on a thread, off the event loop."""
    policies = {}
    for tenant in {d.turn.tenant_id for d in batch}:

        async def load(tenant: str = tenant) -> PrivacyPolicy:
            return await ctx.policies.get(tenant)

        policies[tenant] = await retry_until_done(load, what="reading a privacy policy", backoff=ctx.backoff)
    chars = sum(len(d.turn.content) + sum(map(len, d.turn.metadata.values())) for d in batch)
    if chars > OFF_LOOP_CHARS:  # linear, but seconds of it would stall the worker's loop
        filtered = await asyncio.to_thread(_filter, batch, policies, ctx.max_content_chars)
    else:
        filtered = _filter(batch, policies, ctx.max_content_chars)
    out: list[Decoded] = []
    for item, text, found, refused in filtered:
        if refused:  # skipped by every consumer group, dead-lettered by one (as decode_events' rejects)
            if ctx.dead_letter_rejects:
                ctx.metrics.events.labels(outcome="dead_lettered").inc()
                await ctx.dead_letters.send(
                    item.event, reason="; ".join(refused), error="ValidationError", stage="redact"
                )
            continue
        if found:
            ctx.metrics.count_redactions(found, stage="worker")
            turn = replace(
                item.turn, content=text.content, tool_name=text.tool_name, tags=text.tags, metadata=text.metadata
            )
            item = replace(item, turn=turn)
        out.append(item)
    return out


#: Characters of text in a batch above which the filter runs on a thread (as at the gateway).
OFF_LOOP_CHARS = 64 * 1024


def _filter(
    batch: Sequence[Decoded], policies: dict[str, PrivacyPolicy], max_content_chars: int
) -> list[tuple[Decoded, TurnText, Counter[str], list[str]]]:
    """Each turn redacted, with what was found and why it is refused (empty: it is not)."""
    out = []
    for item in batch:
        turn = item.turn
        policy = policies[turn.tenant_id]
        before = TurnText(turn.content, turn.tool_name, turn.tags, dict(turn.metadata))
        text, found = redact_turn(
            before.content, tool_name=before.tool_name, tags=before.tags, metadata=before.metadata, policy=policy
        )
        refused = [m for _, m in identifier_problems(_identifiers(turn), policy, fields=PERSONAL_IDENTIFIER_FIELDS)]
        if found:
            refused += [m for _, m in grown_past_limits(before, text, max_content_chars=max_content_chars)]
        out.append((item, text, found, refused))
    return out


def _identifiers(turn: Turn) -> dict[str, str | None]:
    return {"agent_id": turn.agent_id, "user_id": turn.user_id, "project_id": turn.project_id,
            "session_id": turn.session_id}  # fmt: skip


async def decode_turns(events: Sequence[faust.EventT[bytes]], ctx: StageContext) -> list[Decoded]:
    """The turns of a batch, decoded, filtered and counted; what cannot be read or is refused is
    dead-lettered (by the one consumer group that does: ``ctx.dead_letter_rejects``)."""
    good, bad = decode_events(events, codec=ctx.codec, max_content_chars=ctx.max_content_chars)
    if ctx.dead_letter_rejects:
        ctx.metrics.events.labels(outcome="dead_lettered").inc(len(bad))
        for rejected in bad:
            await ctx.dead_letters.send(rejected.event, reason=rejected.reason, error=rejected.error, stage="decode")
    if not good:
        return []
    good = await redact_batch(good, ctx)
    if not good:
        return []
    ctx.metrics.events.labels(outcome="accepted").inc(len(good))
    counts = ctx.tokens.count_owned([d.turn.content for d in good], [d.turn.tenant_id for d in good])
    return [replace(d, tokens=n) for d, n in zip(good, counts, strict=True)]


async def fan_out(batch: Sequence[Decoded], stages: Sequence[SinkStage], ctx: StageContext) -> None:
    """Write the batch to every stage concurrently, each isolating what its store rejects."""
    async with asyncio.TaskGroup() as group:
        for stage in stages:
            group.create_task(write_timed(stage, batch, ctx))


async def process_batch(events: Sequence[faust.EventT[bytes]], stages: Sequence[SinkStage], ctx: StageContext) -> None:
    """Decode once, dead-letter rejects, redact, then write to every stage concurrently."""
    if batch := await decode_turns(events, ctx):
        await fan_out(batch, stages, ctx)
