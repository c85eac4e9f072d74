"""The gateway's cache of repeated searches: how long an answer lives and what it holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agents_gateway.retrieval.recent import RecentSearches

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def cache(*, ttl_s: float = 10.0, max_entries: int = 8, max_chars: int = 1000) -> tuple[RecentSearches[str], Clock]:
    clock = Clock()
    return RecentSearches(ttl_s=ttl_s, max_entries=max_entries, max_chars=max_chars, clock=clock), clock


def test_an_answer_lives_for_the_ttl_and_is_counted() -> None:
    searches, clock = cache()
    assert searches.get("q") is None
    searches.put("q", "answer", chars=6, now=NOW, expiries=[])
    clock.t += 9.9
    assert searches.get("q") == "answer"
    clock.t += 0.2
    assert searches.get("q") is None
    assert (searches.hits, searches.misses) == (1, 2)
    assert len(searches) == 0  # the stale entry is dropped when found


def test_a_memory_that_expires_ends_the_answer_holding_it() -> None:
    searches, clock = cache()
    searches.put("q", "answer", chars=6, now=NOW, expiries=[NOW + timedelta(seconds=3), NOW + timedelta(hours=1)])
    clock.t += 2.9
    assert searches.get("q") == "answer"
    clock.t += 0.2
    assert searches.get("q") is None


def test_an_answer_holding_an_expired_memory_is_not_kept() -> None:
    searches, _ = cache()
    searches.put("q", "answer", chars=6, now=NOW, expiries=[NOW])
    assert searches.get("q") is None and len(searches) == 0


def test_the_oldest_used_answer_goes_first_past_the_entry_bound() -> None:
    searches, _ = cache(max_entries=2)
    searches.put("a", "A", chars=1, now=NOW, expiries=[])
    searches.put("b", "B", chars=1, now=NOW, expiries=[])
    assert searches.get("a") == "A"  # b is now the least recently used
    searches.put("c", "C", chars=1, now=NOW, expiries=[])
    assert (searches.get("a"), searches.get("b"), searches.get("c")) == ("A", None, "C")


def test_content_is_bounded_in_characters() -> None:
    searches, _ = cache(max_chars=100)
    searches.put("a", "A", chars=60, now=NOW, expiries=[])
    searches.put("b", "B", chars=60, now=NOW, expiries=[])
    assert (searches.get("a"), searches.get("b")) == (None, "B")
    searches.put("huge", "H", chars=101, now=NOW, expiries=[])
    assert searches.get("huge") is None and searches.get("b") == "B"
    searches.put("b", "B2", chars=90, now=NOW, expiries=[])  # replacing an entry frees its characters
    assert searches.get("b") == "B2" and len(searches) == 1


def test_zero_seconds_or_entries_keeps_nothing_and_counts_nothing() -> None:
    for searches, _ in (cache(ttl_s=0), cache(max_entries=0)):
        searches.put("q", "answer", chars=6, now=NOW, expiries=[])
        assert searches.get("q") is None
        assert (searches.hits, searches.misses, len(searches)) == (0, 0, 0)
        assert not searches.enabled


def test_ended_answers_leave_memory_at_the_next_lookup_a_second_on() -> None:
    searches, clock = cache(ttl_s=2)
    searches.put("old", "O", chars=1, now=NOW, expiries=[])
    clock.t += 1.5
    searches.put("new", "N", chars=1, now=NOW, expiries=[])
    clock.t += 1.0  # "old" has ended, nobody asks for it again
    assert searches.get("new") == "N"
    assert len(searches) == 1


def test_drop_where_removes_matching_entries_at_once() -> None:
    searches, _ = cache()
    for key in (("t1", "alice", 1), ("t1", "bob", 1), ("t2", "alice", 1)):
        searches.put(key, "answer", chars=6, now=NOW, expiries=[])
    assert searches.drop_where(lambda key, _: isinstance(key, tuple) and key[:2] == ("t1", "alice")) == 1
    assert searches.drop_where(lambda _, value: value != "answer") == 0
    assert searches.get(("t1", "alice", 1)) is None
    assert searches.get(("t1", "bob", 1)) == searches.get(("t2", "alice", 1)) == "answer"
