"""The typed lifespan state of the gateway: clients opened once, closed on shutdown."""

from __future__ import annotations

from dataclasses import dataclass

import redis.asyncio as aioredis
from psycopg_pool import AsyncConnectionPool

from agents_gateway.auth import Authenticator
from agents_gateway.metrics import GatewayMetrics
from agents_gateway.producer import TurnProducer
from agents_gateway.retrieval.access import AccessRecorder
from memstream.embedder import Embedder
from memstream.llm.base import LLMClient
from memstream.settings import Settings
from memstream.tokens import TokenCounter
from sinks.postgres.tenant_settings import PolicyCache
from sinks.redis.buffer import SessionBuffers
from sinks.redis.event_claims import EventClaims


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
    #: What extracts facts and writes summaries (for /readyz): Gemini, or the offline fallback.
    memory_models: str
    access: AccessRecorder
    tokens: TokenCounter
    #: For query decomposition by LLM (None without a Gemini key).
    llm: LLMClient | None
