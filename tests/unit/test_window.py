import orjson

from sinks.redis.buffer import BufferEntry, window


def entry(score: int, tokens: int = 1, name: str | None = None) -> BufferEntry:
    member = orjson.dumps({"id": name or str(score), "tokens": tokens}, option=orjson.OPT_SORT_KEYS)
    return BufferEntry(score=score, member=member, tokens=tokens)


def ids(entries: list[BufferEntry]) -> list[str]:
    return [orjson.loads(e.member)["id"] for e in entries]


def test_keeps_the_newest_turns_in_time_order() -> None:
    kept = window([entry(s) for s in (5, 1, 4, 2, 3)], max_turns=3, max_tokens=100)
    assert ids(kept) == ["3", "4", "5"]


def test_token_bound_trims_oldest_first() -> None:
    kept = window([entry(1, 5), entry(2, 5), entry(3, 5)], max_turns=10, max_tokens=11)
    assert ids(kept) == ["2", "3"]


def test_newest_turn_stays_even_when_alone_it_is_over_budget() -> None:
    kept = window([entry(1, 2), entry(2, 50)], max_turns=10, max_tokens=10)
    assert ids(kept) == ["2"]


def test_token_walk_stops_at_the_first_turn_that_does_not_fit() -> None:
    # 3 (4 tokens) fits, 2 (8) does not -> 1 (1) is dropped too: the buffer stays contiguous.
    kept = window([entry(1, 1), entry(2, 8), entry(3, 4)], max_turns=10, max_tokens=10)
    assert ids(kept) == ["3"]


def test_redelivered_turns_are_idempotent() -> None:
    turns = [entry(s) for s in range(1, 6)]
    once = window(turns, max_turns=4, max_tokens=100)
    twice = window(turns + turns[2:], max_turns=4, max_tokens=100)
    assert once == twice


def test_equal_times_order_by_member() -> None:
    kept = window([entry(7, name="b"), entry(7, name="a")], max_turns=5, max_tokens=100)
    assert ids(kept) == ["a", "b"]
