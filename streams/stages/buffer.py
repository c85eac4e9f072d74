"""Session-buffer updater: the last turns of each session in Redis, many sessions per round trip."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sinks.postgres.erasure import forgotten, lock_users
from sinks.postgres.forgetting import forgotten_episodes
from sinks.postgres.tenancy import act_as
from sinks.redis.buffer import BufferEntry, SessionRef, to_entry
from streams.compaction import CompactionRequests
from streams.decoding import Decoded
from streams.resources import PipelineResources
from streams.stages.base import SinkStage


class BufferStage(SinkStage):
    name = "buffer"

    def __init__(self, resources: PipelineResources, compaction: CompactionRequests) -> None:
        self.resources = resources
        self.compaction = compaction

    async def write(self, batch: Sequence[Decoded]) -> None:
        by_tenant: dict[str, list[Decoded]] = defaultdict(list)
        for item in batch:
            by_tenant[item.turn.tenant_id].append(item)
        # Holding the users' shared locks while Redis is written: an erasure (or a turn forgotten
        # on its own) waits for this batch, then deletes the buffers; later batches see its tombstone.
        async with self.resources.pool.connection() as conn, conn.transaction():
            by_session: dict[SessionRef, list[BufferEntry]] = defaultdict(list)
            for tenant, items in sorted(by_tenant.items()):
                await act_as(conn, tenant, actor="worker")
                users = {d.turn.user_id for d in items}
                await lock_users(conn, tenant, users)
                erased = await forgotten(
                    conn, tenant, ((d.turn.event_id, d.turn.user_id, d.turn.received_at) for d in items)
                )
                erased |= await forgotten_episodes(conn, tenant, (d.turn.event_id for d in items))
                for item in items:
                    turn = item.turn
                    if turn.event_id in erased:
                        continue
                    by_session[SessionRef.of(turn)].append(to_entry(turn, item.tokens))
            appended = await self.resources.buffers.append(by_session)
        # Sessions past their window: the summariser folds the overflow (summarize-before-trim).
        for ref, result in appended.items():
            if result.request:
                await self.compaction.request(ref, due_turns=result.due)
