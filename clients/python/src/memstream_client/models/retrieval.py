"""Search and context (``GET /v1/search``, ``GET /v1/context``; gateway schemas ``SearchOut``,
``SearchHit``, ``ScoreParts``, ``DecompositionOut``, ``ContextOut``, ``ContextSectionOut``).

Values the gateway names from a fixed set (``kind``, ``vector_scan``, a section's ``name``) are
plain strings here, so that a value added by a newer gateway does not break this client."""

from __future__ import annotations

import uuid
from datetime import datetime

from memstream_client.models.base import Model


class ScoreParts(Model):
    """How a hit's score came about: relevance = rrf x decay x boost; with MMR, the hit's score
    is the relevance less MMR's penalty for redundancy, (1 - 0.7) / 0.7 x the best relevance x
    ``mmr_penalty`` (without MMR, the relevance)."""

    #: 1-based rank by vector similarity, if a candidate.
    vector_rank: int | None
    #: 1-based rank by full-text relevance, if a candidate.
    text_rank: int | None
    rrf: float
    decay: float
    boost: float
    #: rrf x decay x boost: the score before MMR's penalty for redundancy.
    relevance: float
    #: Highest cosine to a hit ranked above it.
    mmr_penalty: float


class SearchHit(Model):
    #: ``episode``, ``fact`` or ``skill``.
    kind: str
    #: The event id of an episode, the fact id, or the skill id.
    id: uuid.UUID
    #: ``episodic``, ``procedural``, ``summary``, ``fact`` or ``skill``.
    memory_type: str
    content: str
    session_id: str | None
    project_id: str | None
    agent_id: str | None
    role: str | None
    #: For facts: ``global``, ``project`` or ``session``.
    scope: str | None
    importance: float
    tags: list[str]
    created_at: datetime
    #: What the hits are ordered by (higher first): the relevance less MMR's penalty (``parts``).
    score: float
    parts: ScoreParts
    #: Indices of the sub-queries that found it.
    sub_queries: list[int]


class Decomposition(Model):
    #: ``off``, ``rules``, or ``llm:<model>``.
    method: str
    queries: list[str]


class SearchResult(Model):
    query: str
    k: int
    embedding_model: str
    decomposition: Decomposition
    #: ``exact`` or ``hnsw``: how the nearest episodes were found.
    vector_scan: str
    hits: list[SearchHit]


class ContextSection(Model):
    #: ``facts``, ``summary``, ``recent`` or ``relevant``.
    name: str
    tokens: int
    items: int
    #: Candidates left out to stay within the budget.
    dropped: int


class Context(Model):
    """What an agent needs before its next turn, packed into a token budget."""

    #: The packed context, ready to put in a prompt.
    prompt: str
    tokens: int
    budget: int
    tokenizer: str
    sections: list[ContextSection]
    #: Tokens of a prompt stuffed with the user's whole history instead.
    naive_tokens: int
    saved_tokens: int
    saved_ratio: float
    decomposition: Decomposition
    #: How the relevant memories' nearest episodes were found (None without a query).
    vector_scan: str | None = None
    facts: list[uuid.UUID]
    relevant: list[SearchHit]
