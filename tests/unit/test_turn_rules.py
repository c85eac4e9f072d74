import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from schemas.turns import MAX_FUTURE, Turn, problems, turn_key


def record(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": str(uuid.uuid4()),
        "tenant_id": "acme",
        "agent_id": "coder",
        "user_id": "alice@example.com",
        "project_id": "CloudRetail",
        "session_id": "s-1",
        "role": "user",
        "content": "hello",
        "event_time": datetime.now(UTC),
        "tags": [],
        "metadata": {},
    }
    base.update(overrides)
    return base


def test_a_good_record_has_no_problems() -> None:
    assert problems(record(), max_content_chars=100) == []


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"tenant_id": ""}, "tenant_id"),
        ({"tenant_id": "a{b}"}, "tenant_id"),
        ({"session_id": "has space"}, "session_id"),
        ({"user_id": "x" * 129}, "user_id"),
        ({"project_id": "bad project"}, "project_id"),
        ({"content": "   "}, "non-empty"),
        ({"content": "x" * 101}, "limit is 100"),
        ({"content": "nul\x00byte"}, "U+0000"),
        ({"content": "escape \x1b[31m red"}, "U+001B"),
        ({"content": "C1 \x85 next line"}, "U+0085"),
        ({"tenant_id": "acme:corp"}, "tenant_id"),
        ({"tenant_id": "Acme"}, "tenant_id"),
        ({"tags": ["a\x00b"]}, "a tag"),
        ({"tags": ["two\nlines"]}, "a tag"),
        ({"tool_name": "deploy\x00"}, "tool_name"),
        ({"tool_name": "deploy\tnow"}, "tool_name"),
        ({"metadata": {"k\x00": "v"}}, "metadata key"),
        ({"metadata": {"k": "v\x00"}}, "metadata value"),
        ({"metadata": {"k" * 129: "v"}}, "metadata"),
        ({"event_time": datetime(1999, 12, 31, tzinfo=UTC)}, "event_time"),
        ({"role": "robot"}, "role"),
        ({"tags": ["x" * 65]}, "tags"),
        ({"metadata": {"k": "v" * 20_000}}, "metadata"),
    ],
)
def test_each_rule_names_what_is_wrong(overrides: dict[str, Any], fragment: str) -> None:
    found = problems(record(**overrides), max_content_chars=100)
    assert len(found) == 1
    assert fragment in found[0]


def test_text_may_hold_tabs_and_line_breaks_but_one_line_fields_may_not() -> None:
    assert problems(record(content="a\tb\r\nc", metadata={"note": "x\ny"}), max_content_chars=100) == []
    assert problems(record(tags=["x\ty"]), max_content_chars=100) != []


def test_an_event_time_far_ahead_of_the_clock_is_refused() -> None:
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    ahead = record(event_time=datetime(9999, 12, 31, tzinfo=UTC))
    assert any("future" in p for p in problems(ahead, max_content_chars=100, now=now))
    soon = record(event_time=now + timedelta(minutes=4))
    assert problems(soon, max_content_chars=100, now=now) == []
    # The worker allows more (clock skew), never unbounded.
    later = record(event_time=now + timedelta(minutes=8))
    assert problems(later, max_content_chars=100, now=now) != []
    assert problems(later, max_content_chars=100, now=now, max_future=2 * MAX_FUTURE) == []


def test_all_problems_are_reported_at_once() -> None:
    assert len(problems(record(tenant_id="", content="", role="x"), max_content_chars=10)) == 3


def test_one_session_maps_to_one_key_and_sessions_do_not_collide() -> None:
    assert turn_key("t", "s") == turn_key("t", "s")
    assert turn_key("t", "s:1") != turn_key("t:s", "1")


def test_turn_from_record_keeps_identity_and_position() -> None:
    rec = record()
    turn = Turn.from_record(rec, schema_id=1, topic="memstream.turns.v1", partition=2, offset=41)
    assert turn.event_id == uuid.UUID(rec["event_id"])
    assert (turn.tenant_id, turn.user_id, turn.session_id) == ("acme", "alice@example.com", "s-1")
    assert (turn.topic, turn.partition, turn.offset, turn.schema_id) == (
        "memstream.turns.v1",
        2,
        41,
        1,
    )


@pytest.mark.parametrize("session", ["a/../b", "a/..", "a/./b", "a//b", "a/", "x:/.."])
def test_an_id_an_http_client_would_normalise_is_refused(session: str) -> None:
    """``GET /v1/sessions/a/../b/buffer`` is sent as ``/v1/sessions/b/buffer``: such an id
    could never be read back as itself (a red-team finding)."""
    assert any("session_id" in p for p in problems(record(session_id=session), max_content_chars=100))


@pytest.mark.parametrize("session", ["a/.b", "a/b.c", "team/s-1", "a/..b", "user@example.com"])
def test_dots_and_slashes_that_stay_themselves_are_fine(session: str) -> None:
    assert problems(record(session_id=session), max_content_chars=100) == []
