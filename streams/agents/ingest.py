"""The ingest agent: consumes ``memstream.turns.v1`` and fans each batch out to the sink
stages (event log, episodes + embedder, session buffer). See ``streams/stage.py``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import faust

from streams.stage import SinkStage, StageContext, run_ingest

AGENT_NAME = "ingest"


def register_ingest(
    app: faust.App, topic: faust.TopicT, stages: Sequence[SinkStage], ctx: StageContext
) -> faust.types.AgentT:  # type: ignore[type-arg]
    async def ingest(stream: faust.StreamT[bytes]) -> None:
        # Agents receive faust.Stream, whose take_events() StreamT does not declare.
        await run_ingest(cast(faust.Stream[bytes], stream), stages, ctx)

    return app.agent(topic, name=f"{app.conf.id}.{AGENT_NAME}")(ingest)
