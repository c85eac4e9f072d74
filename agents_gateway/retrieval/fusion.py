"""Reciprocal-rank fusion: combine ranked lists without comparing their raw scores."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass
class Fused(Generic[K]):
    key: K
    score: float
    #: 1-based rank of the key in each input list it appeared in, by list name.
    ranks: dict[str, int] = field(default_factory=dict)


def fuse_rrf(ranked: Sequence[tuple[str, float, Sequence[K]]], *, k: int = 60) -> list[Fused[K]]:
    """Fuse ``(name, weight, keys best-first)`` lists: score = sum of weight / (k + rank).

    A key missing from a list contributes nothing for it. Ties break by the best rank
    the key reached anywhere, then by the order of the lists, so results are stable.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    for name, weight, _ in ranked:
        if weight < 0:
            raise ValueError(f"weight of {name} must not be negative")
    fused: dict[K, Fused[K]] = {}
    #: The best (rank, list) each key reached: its first sighting, or a better rank in a later list.
    first_seen: dict[K, tuple[int, int]] = {}
    for list_index, (name, weight, keys) in enumerate(ranked):
        seen_here: set[K] = set()
        for position, key in enumerate(keys, start=1):
            if key in seen_here:
                continue  # a list names each key once; later repeats are ignored
            seen_here.add(key)
            entry = fused.get(key)
            if entry is None:  # a search fuses about a hundred keys: no object made per sighting
                fused[key] = Fused(key, weight / (k + position), {name: position})
                first_seen[key] = (position, list_index)
                continue
            entry.score += weight / (k + position)
            entry.ranks[name] = position
            if position < first_seen[key][0]:
                first_seen[key] = (position, list_index)
    return sorted(fused.values(), key=lambda f: (-f.score, first_seen[f.key]))
