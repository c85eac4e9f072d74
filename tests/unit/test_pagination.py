"""Cursors of the list endpoints read back exactly what they carry, and nothing else reads as
one; a user search's text is matched literally (LIKE's wildcards and escape are plain)."""

from __future__ import annotations

import base64
import json
import re
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents_gateway.errors import ApiError
from agents_gateway.pagination import CURSOR_PATTERN, CursorCodec, split_page
from agents_gateway.routes.explorer import AUDIT, MEMORIES, SKILLS, USERS
from sinks.postgres.queries.users import contains_pattern

aware_times = st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7, minutes=-30))]))


@given(moment=aware_times, event_id=st.uuids(), seq=st.integers(0, 2**63 - 1))
def test_a_cursor_reads_back_its_key_exactly(moment: datetime, event_id: uuid.UUID, seq: int) -> None:
    for codec, key in ((MEMORIES, (moment, event_id)), (AUDIT, (moment, seq)), (SKILLS, (event_id,))):
        cursor = codec.encode(*key)
        assert re.fullmatch(CURSOR_PATTERN, cursor), cursor
        assert codec.decode(cursor) == key


def test_a_user_id_cursor_and_no_cursor() -> None:
    assert USERS.decode(USERS.encode("crm:alice@example.com")) == ("crm:alice@example.com",)
    assert USERS.decode(None) is None


def _raw(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


@pytest.mark.parametrize(
    ("codec", "cursor"),
    [
        (MEMORIES, "not base64 at all!"),
        (MEMORIES, "A"),  # not a whole base64 quantum
        (MEMORIES, base64.urlsafe_b64encode(b"\xff\xfe").decode()),  # not JSON
        (MEMORIES, _raw({"memories": 1})),
        (MEMORIES, _raw(["memories", "2026-12-01T09:00:00+00:00"])),  # a part missing
        (MEMORIES, _raw(["memories", "2026-12-01T09:00:00", "d0906faf-3e65-42ff-8f49-4388a6c2a5cd"])),  # no timezone
        (MEMORIES, _raw(["memories", "yesterday", "b2a55ce0-9294-4c96-a27d-93b2038f0235"])),
        (MEMORIES, _raw(["memories", "2026-12-01T09:00:00+00:00", "not-a-uuid"])),
        (MEMORIES, _raw(["audit", "2026-12-01T09:00:00+00:00", 5])),  # another list's cursor
        (AUDIT, _raw(["audit", "2026-12-01T09:00:00+00:00", "5"])),
        (AUDIT, _raw(["audit", "2026-12-01T09:00:00+00:00", True])),
        (AUDIT, _raw(["audit", "2026-12-01T09:00:00+00:00", 2**70])),
        (USERS, _raw(["users", ""])),
        (USERS, _raw(["users", "a\x00b"])),
        (USERS, _raw(["users", ["alice"]])),
        (SKILLS, _raw(["skills", None])),
    ],
)
def test_anything_but_a_cursor_of_the_list_is_a_422(codec: CursorCodec, cursor: str) -> None:
    with pytest.raises(ApiError) as raised:
        codec.decode(cursor)
    assert (raised.value.status, raised.value.code) == (422, "invalid_cursor")
    assert raised.value.details[0]["loc"] == ["query", "cursor"]


@given(st.text(max_size=80))
def test_no_text_makes_the_decoder_fail_otherwise(cursor: str) -> None:
    for codec in (USERS, MEMORIES, SKILLS, AUDIT):
        try:
            codec.decode(cursor)
        except ApiError as exc:
            assert exc.status == 422


def test_a_page_and_whether_another_follows() -> None:
    assert split_page([1, 2, 3], 2) == ([1, 2], True)
    assert split_page([1, 2], 2) == ([1, 2], False)
    assert split_page([], 2) == ([], False)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (None, "%"),
        ("", "%"),
        ("ali", "%ali%"),
        ("a_b", "%a\\_b%"),
        ("100%", "%100\\%%"),
        ("a\\b", "%a\\\\b%"),
        ("\\%_", "%\\\\\\%\\_%"),
    ],
)
def test_a_user_search_is_literal(text: str | None, pattern: str) -> None:
    assert contains_pattern(text) == pattern
