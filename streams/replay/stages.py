"""The live stages, where a replay must plug them differently.

- ``AppliedFacts``: extracted facts go straight to the facts agent's sink (``apply_batch``),
  through the same Avro encoding and validation, instead of over ``memstream.facts.v1``;
- ``LogContextExtraction``: a replayed turn's place in the log is its offset (the live worker
  looks it up, and waits for the ingest worker to log it), and the user's previous session is
  the one before the session's first extracted turn (what the live worker asked at that turn);
- ``FoldNow``: with ``--buffers``, a session past its window is folded into its rolling
  summary at once (the live buffer stage asks the summariser over a topic);
- ``ReplayRejects``: an event a store rejects is counted and named in the run's report
  (the log already holds it: nothing is lost, and nothing is sent to the dead-letter topic).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import faust

from schemas.codec import AvroCodec
from schemas.errors import DecodeError, EncodeError
from schemas.turns import Turn
from sinks.postgres.event_log import LogPosition, previous_session
from sinks.postgres.queries.replay_log import session_start
from sinks.postgres.tenancy import tenant_transaction
from sinks.redis.buffer import SessionRef
from streams.compaction import CompactionRequests
from streams.deadletter import DeadLetters
from streams.resources import MemoryResources
from streams.retry import retry_until_done
from streams.stages.extract import EXTRACTED_ROLES, ExtractionStage
from streams.stages.facts import apply_batch, decode_fact
from streams.stages.summaries import fold_session

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rejected:
    seq: int
    stage: str
    reason: str


class ReplayRejects(DeadLetters):
    """Takes the place of the dead-letter topic in a replay."""

    def __init__(self) -> None:
        self.rejected: list[Rejected] = []
        self.sent = 0

    async def send(self, event: faust.EventT[bytes], *, reason: str, error: str, stage: str) -> None:
        log.warning("replay: event at log position %d rejected by %s: %s: %s", event.message.offset, stage, error,
                    reason)  # fmt: skip
        self.rejected.append(Rejected(event.message.offset, stage, f"{error}: {reason}"))


class AppliedFacts:
    """A ``FactSink`` that applies facts at once, in order (live: the facts topic and agent)."""

    def __init__(self, resources: MemoryResources, codec: AvroCodec, rejects: ReplayRejects) -> None:
        self.resources = resources
        self.codec = codec
        self.rejects = rejects

    async def publish(self, events: Sequence[dict[str, Any]]) -> None:
        records = []
        for event in events:
            try:
                records.append(decode_fact(self.codec, self.codec.encode(event)))
            except (DecodeError, EncodeError) as exc:
                log.warning("replay: fact of event %s rejected: %s", event["source_event_id"], exc)
                self.rejects.rejected.append(Rejected(-1, "facts", f"{type(exc).__name__}: {exc}"))
        if records:
            await apply_batch(self.resources, records, self.resources.backoff)


class LogContextExtraction(ExtractionStage):
    """Fact extraction with its context read from the event log."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sessions: dict[tuple[str, str, str, str], str | None] = {}

    async def _position(self, turn: Turn) -> LogPosition:
        """A replayed turn comes from the log: its offset is its place there."""
        return LogPosition(seq=turn.offset, forgotten=False)

    async def _previous_session(self, turn: Turn) -> str | None:
        """The user's latest session before this session's first extracted turn (the live
        worker asks at the first turn it extracts, and keeps the answer)."""
        key = (turn.tenant_id, turn.user_id, turn.session_id, turn.agent_id)
        if key not in self._sessions:
            async with tenant_transaction(self.resources.pool, turn.tenant_id, actor="worker") as conn:
                start = await session_start(conn, turn.tenant_id, turn.user_id, turn.session_id, EXTRACTED_ROLES)
                self._sessions[key] = await previous_session(
                    conn, tenant_id=turn.tenant_id, user_id=turn.user_id, session_id=turn.session_id,
                    agent_id=turn.agent_id, before=start or turn.event_time,
                )  # fmt: skip
        return self._sessions[key]


class FoldNow(CompactionRequests):
    """With ``--buffers``: fold a session's overflow into its rolling summary right away."""

    def __init__(self, resources: MemoryResources) -> None:
        self.resources = resources

    async def request(self, ref: SessionRef, *, due_turns: int) -> None:
        async def fold() -> int:
            return await fold_session(self.resources, ref)

        where = f"{ref.tenant_id}/{ref.user_id}/{ref.session_id}"
        await retry_until_done(fold, what="session summary", backoff=self.resources.backoff, where=where)
