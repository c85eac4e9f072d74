"""Fact extraction: from each user or assistant turn, facts published to ``memstream.facts.v1``.

Runs in the long-term memory worker (its own consumer group), never on an agent's request
path and never in the way of ingestion: a slow or failing LLM delays facts, not turns.
Each turn is extracted with its session's recent turns as context, the user's previous
session id and the turn's date, so relative time words can be rewritten. When the LLM's
answer is malformed (twice) or refused, the offline extractor handles that turn instead,
and says so in the fact's ``extractor``; rate limits and outages are retried.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

import faust

from memstream.extraction.types import ExtractedFact, ExtractionContext, ExtractionTurn
from memstream.llm.base import LLMError
from schemas.codec import AvroCodec
from schemas.turns import Turn
from sinks.postgres.event_log import LogPosition, log_position, previous_session, turns_logged_before
from sinks.postgres.tenancy import tenant_transaction
from sinks.redis.buffer import SessionRef
from streams.decoding import Decoded
from streams.extraction_records import ExtractionRecords
from streams.resources import MemoryResources
from streams.stages.base import SinkStage

log = logging.getLogger(__name__)

FACT_NAMESPACE = uuid.UUID("0d5e0b2c-7f40-4d8b-9c1e-6d656d666163")
EXTRACTED_ROLES = ("user", "assistant")
CONTEXT_TURNS = 6
#: How long a turn's extraction waits for the ingest worker to log it (and the turns before it).
CONTEXT_WAIT_S = 30.0
NOT_FOUND_TTL_S = 30.0


def fact_id(source_event_id: uuid.UUID, index: int, fact: ExtractedFact) -> uuid.UUID:
    """Deterministic: the same event re-extracted (a redelivery, a replay) gives the same ids."""
    return uuid.uuid5(FACT_NAMESPACE, f"{source_event_id}:{index}:{fact.scope}:{fact.entity}")


def to_extraction_turn(turn: Turn) -> ExtractionTurn:
    return ExtractionTurn(
        event_id=turn.event_id, role=turn.role, content=turn.content, event_time=turn.event_time,
        session_id=turn.session_id, project_id=turn.project_id, tool_name=turn.tool_name,
        tool_status=turn.tool_status,
    )  # fmt: skip


class FactSink(Protocol):
    """Where extracted facts go: the facts topic (live), or straight to the fact sink (replay)."""

    async def publish(self, events: Sequence[dict[str, Any]]) -> None: ...


class TopicFacts:
    """Publishes fact events to ``memstream.facts.v1``, keyed by user (a user's facts apply in
    order), and waits for the broker to acknowledge them."""

    def __init__(self, topic: faust.TopicT, codec: AvroCodec) -> None:
        self.topic = topic
        self.codec = codec

    async def publish(self, events: Sequence[dict[str, Any]]) -> None:
        acks = []
        for event in events:
            key = f"{event['tenant_id']}\x1f{event['user_id']}".encode()
            acks.append(await self.topic.send(key=key, value=self.codec.encode(event)))
        for ack in acks:
            await ack


class ExtractionStage(SinkStage):
    name = "extract"

    def __init__(
        self, resources: MemoryResources, facts: FactSink, *, records: ExtractionRecords | None = None
    ) -> None:
        self.resources = resources
        self.facts = facts
        self._records = records
        #: (tenant, user, session) -> (previous session, when to look again)
        self._previous: OrderedDict[tuple[str, str, str, str], tuple[str | None, float]] = OrderedDict()

    @property
    def records(self) -> ExtractionRecords:
        """LLM results recorded by (event, extractor version): reused, and recorded when new."""
        if self._records is None:
            self._records = ExtractionRecords(self.resources.pool)
        return self._records

    async def _previous_session(self, turn: Turn) -> str | None:
        """The user's latest earlier session in the event log that the turn's agent may see (its
        own and shared events). Found ones are kept; "none yet" is asked again after a while (the
        ingest worker may not have stored it yet)."""
        key = (turn.tenant_id, turn.user_id, turn.session_id, turn.agent_id)
        cached = self._previous.get(key)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]
        async with tenant_transaction(self.resources.pool, turn.tenant_id, actor="worker") as conn:
            previous = await previous_session(
                conn, tenant_id=turn.tenant_id, user_id=turn.user_id, session_id=turn.session_id,
                agent_id=turn.agent_id, before=turn.event_time,
            )  # fmt: skip
        self._previous[key] = (previous, float("inf") if previous else time.monotonic() + NOT_FOUND_TTL_S)
        while len(self._previous) > 10_000:
            self._previous.popitem(last=False)
        return previous

    async def _position(self, turn: Turn) -> LogPosition:
        """Where the turn is in the event log; while the ingest worker has not logged it, wait
        (up to ``CONTEXT_WAIT_S``): the turns before it are only all there once it is."""
        deadline = time.monotonic() + CONTEXT_WAIT_S
        pause = 0.02
        while True:
            async with tenant_transaction(self.resources.pool, turn.tenant_id, actor="worker") as conn:
                position = await log_position(
                    conn, tenant_id=turn.tenant_id, user_id=turn.user_id, event_id=turn.event_id,
                    received_at=turn.received_at,
                )  # fmt: skip
            if position.seq is not None or position.forgotten:
                return position
            if time.monotonic() >= deadline:
                log.warning(
                    "turn %s is not in the event log after %.0f s (is the ingest worker running?);"
                    " extracting it with the session's turns logged so far",
                    turn.event_id, CONTEXT_WAIT_S,
                )  # fmt: skip
                return position
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)

    async def _recent(self, turn: Turn) -> list[ExtractionTurn]:
        """The session's last turns logged before this one (every role: what the conversation
        was), the same for the live worker, a redelivery and a replay. The batch's own later
        turns are added by the caller, in the order they were consumed, which is the log's."""
        position = await self._position(turn)
        async with tenant_transaction(self.resources.pool, turn.tenant_id, actor="worker") as conn:
            earlier = await turns_logged_before(
                conn, tenant_id=turn.tenant_id, user_id=turn.user_id, session_id=turn.session_id,
                seq=position.seq, limit=CONTEXT_TURNS,
            )  # fmt: skip
        return [
            ExtractionTurn(event_id=t.event_id, role=t.role, content=t.content, event_time=t.event_time,
                           session_id=turn.session_id, project_id=t.project_id, tool_name=t.tool_name,
                           tool_status=t.tool_status)
            for t in earlier
        ]  # fmt: skip

    async def _extract(self, turn: Turn, context: ExtractionContext) -> tuple[list[ExtractedFact], str]:
        models = self.resources.models
        subject = to_extraction_turn(turn)
        for attempt in (1, 2):
            try:
                return await models.extractor.extract(subject, context), models.extractor.name
            except LLMError as exc:
                if exc.kind == "malformed" and attempt == 1:
                    continue
                if exc.kind not in ("malformed", "refused"):
                    raise  # rate limits and outages: retried by the stage, nothing is lost
                log.warning(
                    "extraction of %s by %s failed (%s: %s); using %s",
                    turn.event_id, models.extractor.name, exc.kind, exc, models.fallback_extractor.name,
                )  # fmt: skip
                break
        return await models.fallback_extractor.extract(subject, context), models.fallback_extractor.name

    async def write(self, batch: Sequence[Decoded]) -> None:
        by_session: dict[SessionRef, list[Turn]] = defaultdict(list)
        for item in batch:
            by_session[SessionRef.of(item.turn)].append(item.turn)
        jobs: list[tuple[Turn, ExtractionContext]] = []
        for turns in by_session.values():
            if not any(turn.role in EXTRACTED_ROLES for turn in turns):
                continue
            earlier = await self._recent(turns[0])
            seen = {t.event_id for t in earlier}
            for turn in turns:
                if turn.event_id in seen:  # delivered twice in one batch: logged once
                    continue
                seen.add(turn.event_id)
                if turn.role in EXTRACTED_ROLES:
                    jobs.append((turn, await self._context(turn, tuple(earlier[-CONTEXT_TURNS:]))))
                earlier.append(to_extraction_turn(turn))
        results = await self._extract_all(jobs)
        await self.facts.publish(
            [
                self._event(turn, index, fact, extractor)
                for (turn, _), (facts, extractor) in zip(jobs, results, strict=True)
                for index, fact in enumerate(facts)
            ]
        )

    async def _extract_all(
        self, jobs: Sequence[tuple[Turn, ExtractionContext]]
    ) -> list[tuple[list[ExtractedFact], str]]:
        """Each job's facts and who made them. An LLM's results are recorded, and reused when
        recorded before (a redelivery or a replay costs no second call)."""
        extractor = self.resources.models.extractor
        if extractor.fallback:  # the offline rules: deterministic and free
            return list(await asyncio.gather(*(self._extract(turn, context) for turn, context in jobs)))
        recorded = await self.records.lookup([turn for turn, _ in jobs], extractor.name)
        missing = [(turn, context) for turn, context in jobs if turn.event_id not in recorded]
        made = await asyncio.gather(*(self._extract(turn, context) for turn, context in missing))
        await self.records.record(
            [(turn, facts, by) for (turn, _), (facts, by) in zip(missing, made, strict=True)], extractor.name
        )
        fresh = {turn.event_id: result for (turn, _), result in zip(missing, made, strict=True)}
        return [
            (recorded[turn.event_id].facts, recorded[turn.event_id].produced_by)
            if turn.event_id in recorded
            else fresh[turn.event_id]
            for turn, _ in jobs
        ]

    async def _context(self, turn: Turn, recent: tuple[ExtractionTurn, ...]) -> ExtractionContext:
        return ExtractionContext(
            tenant_id=turn.tenant_id, user_id=turn.user_id, agent_id=turn.agent_id, session_id=turn.session_id,
            project_id=turn.project_id, now=turn.event_time,
            previous_session_id=await self._previous_session(turn), recent=recent,
        )  # fmt: skip

    @staticmethod
    def _event(turn: Turn, index: int, fact: ExtractedFact, extractor: str) -> dict[str, Any]:
        return {
            "fact_id": str(fact_id(turn.event_id, index, fact)),
            "tenant_id": turn.tenant_id,
            "user_id": turn.user_id,
            "agent_id": turn.agent_id,
            "session_id": turn.session_id,
            "project_id": fact.project_id if fact.scope == "project" else None,
            "source_event_id": str(turn.event_id),
            "observed_at": turn.event_time,
            "received_at": turn.received_at,
            "entity": fact.entity,
            "category": fact.category,
            "scope": fact.scope,
            "summary": fact.summary,
            "importance": fact.importance,
            "triples": [{"subject": t.subject, "predicate": t.predicate, "object": t.object} for t in fact.triples],
            "shared": turn.shared,
            "extractor": extractor,
        }
