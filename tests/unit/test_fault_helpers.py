"""The pure parts of fault handling: retry-topic delays and headers, dead-letter selection."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from ops.dlq import DeadLetter, Selection
from schemas import topics
from streams.parking import ATTEMPT, MAX_DELAY_S, attempt_of, delay_for, header


def event(headers: Any) -> Any:
    return SimpleNamespace(message=SimpleNamespace(headers=headers))


def test_parking_delays_double_and_are_capped() -> None:
    assert [delay_for(n, 2.0) for n in (1, 2, 3)] == [2.0, 4.0, 8.0]
    assert delay_for(30, 2.0) == MAX_DELAY_S


@pytest.mark.parametrize("headers", [[(ATTEMPT, b"3")], {ATTEMPT: b"3"}])
def test_the_attempt_is_read_from_either_header_shape(headers: Any) -> None:
    assert attempt_of(event(headers)) == 3
    assert header(event(headers), "other") is None


@pytest.mark.parametrize("headers", [None, [], [(ATTEMPT, b"x")]])
def test_a_turn_from_the_turns_topic_or_a_bad_header_is_attempt_zero(headers: Any) -> None:
    assert attempt_of(event(headers)) == 0


def letter(offset: int, reason: str, stage: str = "decode") -> DeadLetter:
    headers = {topics.DLQ_REASON: reason, topics.DLQ_STAGE: stage, topics.DLQ_SOURCE_TOPIC: topics.TURNS}
    return DeadLetter(partition=0, offset=offset, key=None, value=b"v", headers=headers)


def test_dead_letters_are_selected_by_every_condition_given() -> None:
    letters = [letter(0, "unknown schema id 7"), letter(1, "content is 9 characters; the limit is 2"),
               letter(2, "rejected", stage="episodes")]  # fmt: skip
    assert [d.offset for d in letters if Selection()(d)] == [0, 1, 2]
    assert [d.offset for d in letters if Selection(reason="LIMIT")(d)] == [1]
    assert [d.offset for d in letters if Selection(offsets=frozenset({0, 2}), stage="decode")(d)] == [0]
    assert [d.offset for d in letters if Selection(source_topic=topics.FACTS)(d)] == []
    assert letters[1].as_dict()["source"] == {"topic": topics.TURNS, "partition": None, "offset": None}
