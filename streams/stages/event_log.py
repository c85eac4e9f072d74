"""The event-log stage: every accepted turn, appended to the durable history in Postgres."""

from __future__ import annotations

from collections.abc import Sequence

from sinks.postgres.event_log import append_events
from sinks.postgres.maintenance import register_tenants
from streams.decoding import Decoded
from streams.resources import PipelineResources
from streams.stages.base import SinkStage


class EventLogStage(SinkStage):
    name = "event-log"

    def __init__(self, resources: PipelineResources) -> None:
        self.resources = resources

    async def write(self, batch: Sequence[Decoded]) -> None:
        async with self.resources.pool.connection() as conn:
            await register_tenants(conn, {d.turn.tenant_id for d in batch})
            await append_events(conn, [d.turn for d in batch])
