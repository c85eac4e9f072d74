"""The gateway's cache of repeated searches: how long an answer lives and what it holds."""

from __future__ import annotations

import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta

from agents_gateway.retrieval.ranking import Scored
from agents_gateway.retrieval.recent import RecentSearches
from agents_gateway.retrieval.search import Hit
from agents_gateway.retrieval.service import answer_bytes
from sinks.postgres.queries.retrieval import Candidate

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def cache(*, ttl_s: float = 10.0, max_entries: int = 8, max_bytes: int = 1000) -> tuple[RecentSearches[str], Clock]:
    clock = Clock()
    return RecentSearches(ttl_s=ttl_s, max_entries=max_entries, max_bytes=max_bytes, clock=clock), clock


def test_an_answer_lives_for_the_ttl_and_is_counted() -> None:
    searches, clock = cache()
    assert searches.get("q") is None
    searches.put("q", "answer", size=6, now=NOW, expiries=[])
    clock.t += 9.9
    assert searches.get("q") == "answer"
    clock.t += 0.2
    assert searches.get("q") is None
    assert (searches.hits, searches.misses) == (1, 2)
    assert len(searches) == 0  # the stale entry is dropped when found


def test_a_memory_that_expires_ends_the_answer_holding_it() -> None:
    searches, clock = cache()
    searches.put("q", "answer", size=6, now=NOW, expiries=[NOW + timedelta(seconds=3), NOW + timedelta(hours=1)])
    clock.t += 2.9
    assert searches.get("q") == "answer"
    clock.t += 0.2
    assert searches.get("q") is None


def test_an_answer_holding_an_expired_memory_is_not_kept() -> None:
    searches, _ = cache()
    searches.put("q", "answer", size=6, now=NOW, expiries=[NOW])
    assert searches.get("q") is None and len(searches) == 0


def test_the_oldest_used_answer_goes_first_past_the_entry_bound() -> None:
    searches, _ = cache(max_entries=2)
    searches.put("a", "A", size=1, now=NOW, expiries=[])
    searches.put("b", "B", size=1, now=NOW, expiries=[])
    assert searches.get("a") == "A"  # b is now the least recently used
    searches.put("c", "C", size=1, now=NOW, expiries=[])
    assert (searches.get("a"), searches.get("b"), searches.get("c")) == ("A", None, "C")


def test_content_is_bounded_in_bytes() -> None:
    searches, _ = cache(max_bytes=100)
    searches.put("a", "A", size=60, now=NOW, expiries=[])
    searches.put("b", "B", size=60, now=NOW, expiries=[])
    assert (searches.get("a"), searches.get("b")) == (None, "B")
    searches.put("huge", "H", size=101, now=NOW, expiries=[])
    assert searches.get("huge") is None and searches.get("b") == "B"
    searches.put("b", "B2", size=90, now=NOW, expiries=[])  # replacing an entry frees its bytes
    assert searches.get("b") == "B2" and len(searches) == 1


def test_zero_seconds_or_entries_keeps_nothing_and_counts_nothing() -> None:
    for searches, _ in (cache(ttl_s=0), cache(max_entries=0)):
        searches.put("q", "answer", size=6, now=NOW, expiries=[])
        assert searches.get("q") is None
        assert (searches.hits, searches.misses, len(searches)) == (0, 0, 0)
        assert not searches.enabled


def test_ended_answers_leave_memory_at_the_next_lookup_a_second_on() -> None:
    searches, clock = cache(ttl_s=2)
    searches.put("old", "O", size=1, now=NOW, expiries=[])
    clock.t += 1.5
    searches.put("new", "N", size=1, now=NOW, expiries=[])
    clock.t += 1.0  # "old" has ended, nobody asks for it again
    assert searches.get("new") == "N"
    assert len(searches) == 1


def test_drop_where_removes_matching_entries_at_once() -> None:
    searches, _ = cache()
    for key in (("t1", "alice", 1), ("t1", "bob", 1), ("t2", "alice", 1)):
        searches.put(key, "answer", size=6, now=NOW, expiries=[])
    assert searches.drop_where(lambda key, _: isinstance(key, tuple) and key[:2] == ("t1", "alice")) == 1
    assert searches.drop_where(lambda _, value: value != "answer") == 0
    assert searches.get(("t1", "alice", 1)) is None
    assert searches.get(("t1", "bob", 1)) == searches.get(("t2", "alice", 1)) == "answer"


def _hits(n: int, *, content: str, tags: list[str]) -> list[Hit]:
    hits = []
    for i in range(n):
        candidate = Candidate("episode", uuid.UUID(int=i), "episodic", f"{content} {i}", NOW, 0.5,
                              [f"{t}{i}" for t in tags], b"", session_id=f"s{i}", agent_id="agent",
                              role="user", distance=0.3)  # fmt: skip
        scored = Scored(key=("episode", candidate.id), rrf=0.01, created_at=NOW, importance=0.5,
                        tags=candidate.tags, embedding=None, decays=True)  # fmt: skip
        scored.parts = {"vector_rank": i + 1, "text_rank": 0}
        hits.append(Hit(candidate, scored, [0]))
    return hits


def test_an_answers_size_counts_what_it_holds_in_memory() -> None:
    """``answer_bytes`` is no less than most of what the hits take in memory (tracemalloc),
    whatever they hold most of: 32 tags of 64 characters each, long content in any script, or
    next to nothing."""
    shapes = {
        "tags": {"content": "m", "tags": ["t" * 62 + f"{j:02d}" for j in range(32)]},
        "latin content": {"content": "x" * 30_000, "tags": []},
        "CJK content": {"content": "記憶" * 8_000, "tags": ["决定"]},
        "small": {"content": "ok", "tags": []},
    }
    for name, shape in shapes.items():
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            hits = _hits(100, **shape)  # type: ignore[arg-type]
            taken = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
        finally:
            tracemalloc.stop()
        estimate = answer_bytes(hits)
        assert 0.8 * taken <= estimate <= 2.5 * taken, (name, estimate, taken)


def test_a_family_is_held_while_any_of_its_answers_is() -> None:
    """``holds``: two keys of one family (the same question at two generations), and whatever
    drops them (replacement, eviction, expiry, ``drop_where``) drops the family's count too."""
    searches, clock = cache(max_entries=2)
    assert not searches.holds("f")
    searches.put(("q", 1), "A", size=1, now=NOW, expiries=[], family="f")
    searches.put(("q", 1), "A'", size=1, now=NOW, expiries=[], family="f")  # replaced, counted once
    searches.put(("q", 2), "B", size=1, now=NOW, expiries=[], family="f")
    searches.put("other", "C", size=1, now=NOW, expiries=[])  # evicts ("q", 1); no family
    assert searches.holds("f") and not searches.holds(None) and len(searches) == 2
    assert searches.drop_where(lambda key, _: key == ("q", 2)) == 1
    assert not searches.holds("f")
    searches.put(("q", 3), "D", size=1, now=NOW, expiries=[], family="f")
    clock.t += 11
    assert searches.get(("q", 3)) is None and not searches.holds("f"), "expired and dropped"
