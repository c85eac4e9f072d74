"""The pipeline a replay runs: logged events in, the live workers' stages and sinks behind.

Turns are encoded as the Avro records they arrived as and handed to ``process_batch`` (decode,
validation, privacy filter, token counts, then every stage concurrently), exactly as the
ingest and memory workers receive a batch from Kafka. A logged compaction is re-applied by
the maintenance code at its place in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date
from typing import Any, cast

import faust
from faust.types import AppT
from faust.types.tuples import Message

from schemas.codec import AvroCodec, fact_event_codec, turn_event_codec
from schemas.errors import EncodeError
from schemas.turns import turn_key
from sinks.postgres.maintenance import Visibility, episodes_of_day
from sinks.postgres.queries.replay_log import LoggedEvent
from sinks.postgres.tenancy import tenant_transaction
from streams.extraction_records import ExtractionRecords
from streams.maintenance import Maintainer
from streams.replay.resources import ReplayResources
from streams.replay.stages import AppliedFacts, FoldNow, LogContextExtraction, Rejected, ReplayRejects
from streams.retry import retry_until_done
from streams.stages.base import SinkStage, StageContext, process_batch
from streams.stages.buffer import BufferStage
from streams.stages.episodes import EpisodesStage
from streams.stages.procedures import ProcedureStage

log = logging.getLogger(__name__)

#: The topic name replayed records carry (their offset is the event's log position).
REPLAY_SOURCE = "memstream.replay"


def to_event(logged: LoggedEvent, codec: AvroCodec) -> faust.EventT[bytes]:
    """The logged turn as the Kafka record the workers consume, with the time memstream
    received it as the record's. Replayed events never reach a broker and are never
    acknowledged, so they carry no app."""
    record = {
        "event_id": str(logged.event_id), "tenant_id": logged.tenant_id, "agent_id": logged.agent_id,
        "user_id": logged.user_id, "project_id": logged.project_id, "session_id": logged.session_id,
        "role": logged.role, "content": logged.content, "event_time": logged.event_time,
        "tool_name": logged.tool_name, "tool_status": logged.tool_status, "tags": list(logged.tags),
        "metadata": {k: str(v) for k, v in logged.metadata.items()}, "shared": logged.shared,
    }  # fmt: skip
    key = turn_key(logged.tenant_id, logged.session_id)
    value = codec.encode(record)
    message = Message(
        topic=REPLAY_SOURCE, partition=0, offset=logged.seq, timestamp=logged.received_at.timestamp(),
        timestamp_type=0, headers=None, key=key, value=value, checksum=None,
    )  # fmt: skip
    return faust.Event(cast(AppT, None), key, value, None, message)


def logged_visibility(metadata: dict[str, Any]) -> Visibility | None:
    """The agent and visibility a logged compaction covered (None: logged before days were
    compacted per agent, when one summary covered every agent's episodes of the day)."""
    agent = metadata.get("agent_id")
    return Visibility(str(agent), str(metadata.get("shared")) == "True") if agent else None


class ReplayPipeline:
    """The stages over the replay's resources (opened by the caller)."""

    def __init__(self, resources: ReplayResources, *, re_extract: bool, buffers: bool) -> None:
        settings = resources.settings
        self.resources = resources
        self.rejects = ReplayRejects()
        self.codec = turn_event_codec()
        records = ExtractionRecords(resources.pool, reuse=not re_extract, replace=re_extract)
        facts = AppliedFacts(resources, fact_event_codec(), self.rejects)
        self.stages: tuple[SinkStage, ...] = (
            EpisodesStage(resources),
            LogContextExtraction(resources, facts, records=records),
            ProcedureStage(resources),
            *((BufferStage(resources, FoldNow(resources)),) if buffers else ()),
        )
        self.ctx = StageContext.of(resources, self.rejects, codec=self.codec)
        self.maintainer = Maintainer(
            resources.pool, settings, resources.models.summarizer, resources.embedder, resources.tokens,
            log_compactions=False,
        )  # fmt: skip

    @property
    def rejected(self) -> list[Rejected]:
        return self.rejects.rejected

    async def apply(self, events: Sequence[LoggedEvent]) -> None:
        """Process events in log order: runs of turns as batches, compactions in between."""
        turns: list[faust.EventT[bytes]] = []
        for logged in events:
            if logged.is_maintenance:
                await self._turns(turns)
                turns = []
                await self._maintenance(logged)
                continue
            try:
                turns.append(to_event(logged, self.codec))
            except EncodeError as exc:
                self.rejects.rejected.append(Rejected(logged.seq, "encode", str(exc)))
        await self._turns(turns)

    async def _turns(self, events: list[faust.EventT[bytes]]) -> None:
        if events:
            await process_batch(events, self.stages, self.ctx)

    async def _maintenance(self, logged: LoggedEvent) -> None:
        if logged.metadata.get("kind") != "compaction":
            log.warning("replay: skipping maintenance record %s of unknown kind", logged.event_id)
            return
        day = date.fromisoformat(str(logged.metadata["day"]))

        async def compact() -> None:
            async with tenant_transaction(self.resources.pool, logged.tenant_id, actor="maintenance") as conn:
                episodes = await episodes_of_day(
                    conn,
                    logged.user_id,
                    day,
                    cap=self.resources.settings.summary_fold_max_turns,
                    visibility=logged_visibility(logged.metadata),
                )
            if not episodes.episodes:
                return  # already compacted (in place), or nothing left of that day
            summary_id = await self.maintainer.compact_day(logged.tenant_id, episodes)
            if str(summary_id) != logged.metadata.get("summary_event_id"):
                log.warning("replay: the compaction of %s made summary %s, the log names %s", day, summary_id,
                            logged.metadata.get("summary_event_id"))  # fmt: skip

        await retry_until_done(compact, what="compaction", backoff=self.resources.backoff, where=str(logged.event_id))
