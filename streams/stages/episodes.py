"""Embedder + episodic sink: embed a batch of turns and upsert them as episodic memory."""

from __future__ import annotations

from collections.abc import Sequence

from memstream.importance import importance
from sinks.postgres.episodes import Episode, upsert_episodes
from streams.decoding import Decoded
from streams.resources import PipelineResources
from streams.stages.base import SinkStage


class EpisodesStage(SinkStage):
    name = "episodes"

    def __init__(self, resources: PipelineResources) -> None:
        self.resources = resources

    async def write(self, batch: Sequence[Decoded]) -> None:
        embedder = self.resources.embedder
        texts = [d.turn.content for d in batch]
        vectors = await embedder.embed_owned(texts, [d.turn.tenant_id for d in batch])
        episodes = [
            Episode(
                turn=d.turn,
                embedding=v,
                token_count=d.tokens,
                importance=importance(
                    d.turn.content, role=d.turn.role, tags=d.turn.tags, tool_status=d.turn.tool_status
                ),
            )
            for d, v in zip(batch, vectors, strict=True)
        ]
        async with self.resources.pool.connection() as conn:
            await upsert_episodes(conn, episodes, model=embedder.model_name)
