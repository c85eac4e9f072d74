"""Ranking after fusion, each step switchable: temporal decay, importance and tag boosts, and
maximal-marginal-relevance de-duplication on the embeddings.

Pure functions over scored items, so each is unit-tested on its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

BOOSTED_TAGS = frozenset({"error", "failure", "decision", "preference", "rule", "constraint", "lesson"})


@dataclass(frozen=True)
class RankingOptions:
    decay: bool = True
    #: Days after which an episode's recency weight is halved (facts and skills are current state: no decay).
    half_life_days: float = 30.0
    #: The least an old episode's score is multiplied by: decay breaks ties between similar
    #: matches, it never buries a strong old match under a weak new one.
    decay_floor: float = 0.8
    boosts: bool = True
    importance_weight: float = 0.5
    tag_weight: float = 0.2
    mmr: bool = True
    #: 1 = relevance only; towards 0, diversity counts more (0 itself: no relevance, refused).
    mmr_lambda: float = 0.7
    #: Above this cosine two items count as near-duplicates: the lower one is dropped.
    duplicate_cosine: float = 0.95

    def __post_init__(self) -> None:
        if not 0 < self.mmr_lambda <= 1:
            raise ValueError(f"mmr_lambda must be in (0, 1], not {self.mmr_lambda}")


@dataclass
class Scored:
    """One candidate's score and every part of it (returned so ranking can be debugged)."""

    key: object
    rrf: float
    created_at: datetime
    importance: float
    tags: Sequence[str]
    #: None: the caller hands ``mmr`` every item's embedding as one matrix.
    embedding: npt.NDArray[np.float32] | None
    decays: bool = True
    decay: float = 1.0
    boost: float = 1.0
    mmr_penalty: float = 0.0
    #: What MMR picked it with, in the units of ``score`` (``mmr``); None: not picked by MMR.
    mmr_score: float | None = None
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def score(self) -> float:
        """Relevance: rrf x decay x boost (what MMR starts from, and relevance floors compare)."""
        return self.rrf * self.decay * self.boost

    @property
    def ranking_score(self) -> float:
        """What the hits are ordered by, and so the score a hit shows: MMR's, else ``score``."""
        return self.score if self.mmr_score is None else self.mmr_score


def decay_factor(created_at: datetime, now: datetime, half_life_days: float, floor: float = 0.0) -> float:
    """floor + (1 - floor) · 0.5 ** (age / half-life): 1 for now, halfway to ``floor`` after one
    half-life, ``floor`` for the very old."""
    age_days = max(0.0, (now - created_at).total_seconds() / 86_400)
    return floor + (1.0 - floor) * math.pow(0.5, age_days / half_life_days)


def boost_factor(importance: float, tags: Sequence[str], *, importance_weight: float, tag_weight: float) -> float:
    """1 + w_i·importance, times 1 + w_t when tagged as an error, decision, preference or rule."""
    boost = 1.0 + importance_weight * max(0.0, min(1.0, importance))
    if tags and not BOOSTED_TAGS.isdisjoint(map(str.lower, tags)):
        boost *= 1.0 + tag_weight
    return boost


def adjust(items: list[Scored], options: RankingOptions, now: datetime) -> list[Scored]:
    """Apply decay and boosts; best first."""
    for item in items:
        item.decay = (
            decay_factor(item.created_at, now, options.half_life_days, options.decay_floor)
            if options.decay and item.decays
            else 1.0
        )
        item.boost = (
            boost_factor(item.importance, item.tags, importance_weight=options.importance_weight,
                         tag_weight=options.tag_weight)
            if options.boosts else 1.0
        )  # fmt: skip
    return sorted(items, key=lambda i: -i.score)


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: npt.NDArray[np.float32] = vectors / norms
    return out


def mmr(
    items: list[Scored], k: int, options: RankingOptions, vectors: npt.NDArray[np.float32] | None = None
) -> list[Scored]:
    """Greedy maximal marginal relevance: each pick maximises
    λ·relevance - (1-λ)·max cosine to what is already picked; near-duplicates (cosine above
    ``duplicate_cosine`` to a pick) are dropped. Relevance is the score scaled to [0, 1].

    The gain is computed in the units of ``score`` (the same objective times best score / λ):
    score - (1-λ)/λ · best score · max cosine, and kept as each pick's ``mmr_score`` (the first
    pick's is its score). Picks come in non-increasing gain: an item's redundancy only grows
    as picks are added, so no later pick gains more than an earlier one did, and the order
    and the scores shown agree.

    ``vectors``: the items' embeddings as one matrix, row for row (else each item's own;
    ``None`` for either, or embeddings of different sizes: no common space, no MMR). Only
    the cosines to each pick are computed (k matrix-vector products, not n²)."""
    if not items:
        return []
    if not options.mmr:
        return items[:k]
    if vectors is None:
        embeddings = [i.embedding for i in items]
        if any(e is None for e in embeddings) or len({e.shape[0] for e in embeddings if e is not None}) != 1:
            return items[:k]
        vectors = np.array(embeddings, dtype=np.float32)
    vectors = _unit(vectors)
    top = max(i.score for i in items) or 1.0
    #: The score, and -inf once an item is picked or dropped.
    value = np.array([i.score for i in items], dtype=np.float64)
    #: Each candidate's highest cosine to anything picked so far (0 before the first pick).
    redundancy = np.zeros(len(items), dtype=np.float64)
    #: What a cosine of 1 to a pick costs, in the score's units.
    diversity = (1 - options.mmr_lambda) / options.mmr_lambda * top
    # Each pick's arithmetic goes into buffers made once: a context picks about thirty among
    # a few hundred, and a fresh array per step was most of the loop's time.
    gain = np.empty_like(value)
    cosines = np.empty(len(items), dtype=vectors.dtype)
    chosen: list[int] = []
    for _ in range(len(items)):
        if len(chosen) >= k:
            break
        np.multiply(redundancy, diversity, out=gain)
        np.subtract(value, gain, out=gain)
        best = int(gain.argmax())
        if value[best] == -np.inf:
            break
        value[best] = -np.inf
        items[best].mmr_penalty = float(redundancy[best])
        if chosen and items[best].mmr_penalty >= options.duplicate_cosine:
            continue  # a near-duplicate of something already chosen
        chosen.append(best)
        items[best].mmr_score = float(gain[best])
        np.dot(vectors, vectors[best], out=cosines)
        np.maximum(redundancy, cosines, out=redundancy)
    return [items[i] for i in chosen]
