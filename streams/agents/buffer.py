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
        tokens = self.resources.tokens.count_many([d.turn.content for d in batch])
        by_session: dict[tuple[str, str], list[BufferEntry]] = defaultdict(list)
        for item, count in zip(batch, tokens, strict=True):
            by_session[item.turn.session_key].append(to_entry(item.turn, count))
        await self.resources.buffers.append(by_session)
