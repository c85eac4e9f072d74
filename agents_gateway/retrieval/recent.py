"""Answers to searches asked again within seconds, while the user's memory has not changed.

Agent frameworks ask the same question several times per user turn (Google ADK's
``PreloadMemoryTool`` searches on every model call). Such a repeat is answered from here, in
this gateway process, for ``search_cache_s`` seconds, and only while the user's memory
generation is the one the answer was computed at. That number moves in the same transaction
as any write to what a search returns (migration 0014), and every lookup reads it first, in the
reader's own transaction. So a turn, fact or skill written before a search began is in that
search's answer, and an erased or forgotten memory is not.

The key holds everything the answer depends on: the tenant and the agent the key acts for
(what row-level security lets it see), the user and every filter, the query, ``k``, the
ranking toggles and the tenant's ranking settings, the decomposition method, the embedding
model, the vector scan, the generation and the date. Two callers share an entry only when the
same search would give them the same rows. An entry also ends when a memory in it expires.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

V = TypeVar("V")

#: The most bytes all entries hold together, as their ``size`` estimates them (the answers'
#: strings and objects): entries are dropped least recently used first past this, or past
#: ``max_entries``.
MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class _Entry(Generic[V]):
    deadline: float
    size: int
    value: V
    family: Hashable = None


class RecentSearches(Generic[V]):
    """A bounded map of answers that end after ``ttl_s`` (or when a memory in them expires).
    ``ttl_s`` 0 keeps nothing. Counts its lookups (the cache metric)."""

    def __init__(
        self,
        *,
        ttl_s: float,
        max_entries: int,
        max_bytes: int = MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._clock = clock
        self._entries: OrderedDict[Hashable, _Entry[V]] = OrderedDict()
        #: How many entries each family has (``put``'s ``family``).
        self._families: dict[Hashable, int] = {}
        self._bytes = 0
        self._swept = clock()
        #: Lookups answered from here, and lookups that went to Postgres.
        self.hits = 0
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0 and self.max_entries > 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> V | None:
        if not self.enabled:
            return None
        self._sweep()
        entry = self._entries.get(key)
        if entry is not None and entry.deadline > self._clock():
            self._entries.move_to_end(key)
            self.hits += 1
            return entry.value
        if entry is not None:
            self._drop(key)
        self.misses += 1
        return None

    def holds(self, family: Hashable) -> bool:
        """Whether an entry of ``family`` is held (it may have ended since the last sweep): a
        guess that the same question is about to be answered from here, not a lookup."""
        return family in self._families

    def put(
        self,
        key: Hashable,
        value: V,
        *,
        size: int,
        now: datetime,
        expiries: list[datetime],
        family: Hashable = None,
    ) -> None:
        """Keep ``value`` (about ``size`` bytes in memory) for ``ttl_s`` seconds, or until the
        earliest of ``expiries`` (the memories' own ends, ``now`` being the time the search
        filtered them against), whichever comes first. ``family``: what entries of keys that
        differ only in what the caller learns from the database have in common (``holds``)."""
        if not self.enabled or size > self.max_bytes:
            return
        self._sweep()
        life = min([self.ttl_s, *((at - now).total_seconds() for at in expiries)])
        if life <= 0:
            return
        if key in self._entries:
            self._drop(key)
        self._entries[key] = _Entry(self._clock() + life, size, value, family)
        self._bytes += size
        if family is not None:
            self._families[family] = self._families.get(family, 0) + 1
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))

    def drop_where(self, matches: Callable[[Hashable, V], bool]) -> int:
        """Drop every entry whose key and answer ``match`` (an erased user's, or those holding a
        forgotten memory, at once); how many."""
        keys = [key for key, entry in self._entries.items() if matches(key, entry.value)]
        for key in keys:
            self._drop(key)
        return len(keys)

    def _sweep(self) -> None:
        """Drop ended entries, at most once per second: an answer nobody asks again (an erased
        user's: never) leaves memory soon after it ends, not only when pushed out."""
        now = self._clock()
        if now - self._swept < 1.0:
            return
        self._swept = now
        for key in [key for key, entry in self._entries.items() if entry.deadline <= now]:
            self._drop(key)

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key)
        self._bytes -= entry.size
        if entry.family is not None:
            left = self._families.pop(entry.family) - 1
            if left:
                self._families[entry.family] = left
