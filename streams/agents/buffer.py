"""Session-buffer updater: the last turns of each session in Redis, many sessions per round trip."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sinks.redis.buffer import BufferEntry, to_entry
from streams.decoding import Decoded
from streams.resources import PipelineResources
from streams.stage import SinkStage


class BufferStage(SinkStage):
    name = "buffer"

    def __init__(self, resources: PipelineResources) -> None:
        self.resources = resources

    async def write(self, batch: Sequence[Decoded]) -> None:
        by_session: dict[tuple[str, str], list[BufferEntry]] = defaultdict(list)
        for item in batch:
            by_session[item.turn.session_key].append(to_entry(item.turn, item.tokens))
        await self.resources.buffers.append(by_session)
