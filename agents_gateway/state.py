"""The typed lifespan state of the gateway: clients opened once, closed on shutdown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, cast

import redis.asyncio as aioredis
from fastapi import Depends
from psycopg_pool import AsyncConnectionPool
from starlette.requests import HTTPConnection

from agents_gateway.metrics import GatewayMetrics
from agents_gateway.producer import TurnProducer
from agents_gateway.retrieval.access import AccessRecorder
from agents_gateway.retrieval.recent import RecentSearches
from memstream.embedder import Embedder
from memstream.llm.base import LLMClient
from memstream.settings import Settings
from memstream.tokens import TokenCounter
from sinks.postgres.tenant_settings import PolicyCache
from sinks.postgres.vector_index import IndexWatch
from sinks.redis.buffer import SessionBuffers
from sinks.redis.event_claims import EventClaims

if TYPE_CHECKING:  # auth reads the state through gateway_state
    from agents_gateway.auth import Authenticator


@dataclass
class GatewayState:
    settings: Settings
    producer: TurnProducer
    pool: AsyncConnectionPool
    redis: aioredis.Redis
    buffers: SessionBuffers
    #: Which turn each event id belongs to (a reused id is a 409).
    event_claims: EventClaims
    embedder: Embedder
    auth: Authenticator
    policies: PolicyCache
    metrics: GatewayMetrics
    #: What extracts facts and writes summaries (for /readyz/workers): Gemini, or the offline fallback.
    memory_models: str
    access: AccessRecorder
    tokens: TokenCounter
    #: For query decomposition by LLM (None without a Gemini key).
    llm: LLMClient | None
    #: Whether the HNSW index is there to use (``vector_index=auto`` builds it when needed).
    vector_index: IndexWatch
    #: Answers to searches repeated within seconds (``retrieval/recent.py``), this process's.
    searches: RecentSearches[Any]


def gateway_state(connection: HTTPConnection) -> GatewayState:
    """The gateway's state, set up by the lifespan (``agents_gateway/app.py``)."""
    return cast(GatewayState, connection.app.state.gateway)


async def _state(connection: HTTPConnection) -> GatewayState:
    """``gateway_state`` as a dependency: a coroutine, because FastAPI runs a plain function's
    dependency in its thread pool (a thread hop on every request: 0.3 ms of a search's CPU)."""
    return gateway_state(connection)


#: A route's parameter ``state: Gateway`` is the gateway's state (a FastAPI dependency).
Gateway = Annotated[GatewayState, Depends(_state)]
