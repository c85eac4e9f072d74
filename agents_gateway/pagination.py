"""Keyset pagination of the list endpoints (users, a user's memories and skills, the audit log).

A page ends with the sort key of its last row, handed to the client as an opaque cursor; the
next page is the rows strictly after that key. No OFFSET: a row added between two requests
moves nothing, so a walk over the pages sees every row that was there when it began exactly
once (a new row is seen when it sorts after the cursor). Sort keys are immutable and unique
(a time and an id, a user id, a skill's name and id), so no two rows tie.

The cursor is URL-safe base64 (no padding) of a JSON list: the list's name, then the key's
parts. It is not signed — a made-up cursor only starts the list at another place, under the
same key, tenant and row-level security — but it is read strictly: anything that is not a
cursor of this list is a 422 ``invalid_cursor``.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

import orjson

from agents_gateway.errors import ApiError

#: How many rows a page holds, unless the caller asks for another number (1 to ``MAX_PAGE``).
DEFAULT_PAGE = 50
MAX_PAGE = 200
#: Cursors are short (a time and a UUID: 96 characters, a user id up to 128); anything longer is not one of ours.
MAX_CURSOR_CHARS = 512
CURSOR_PATTERN = f"^[A-Za-z0-9_-]{{1,{MAX_CURSOR_CHARS}}}$"
CURSOR_DESCRIPTION = "The next_cursor of the previous page (omit for the first page)"

T = TypeVar("T")

#: The kinds of value a sort key is made of.
Part = Literal["time", "uuid", "text", "int"]


@dataclass(frozen=True)
class CursorCodec:
    """The cursors of one list: its name and the parts of its sort key, in order."""

    name: str
    parts: tuple[Part, ...]

    def encode(self, *key: datetime | uuid.UUID | str | int) -> str:
        if len(key) != len(self.parts):
            raise ValueError(f"{self.name}: a key of {len(self.parts)} parts expected, got {len(key)}")
        values = [_dump(part, value) for part, value in zip(self.parts, key, strict=True)]
        return base64.urlsafe_b64encode(orjson.dumps([self.name, *values])).rstrip(b"=").decode("ascii")

    def decode(self, cursor: str | None) -> tuple[Any, ...] | None:
        """The sort key ``cursor`` carries (None for the first page); 422 when it is not a
        cursor of this list."""
        if cursor is None:
            return None
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            value = orjson.loads(raw)
        except (binascii.Error, ValueError):  # orjson.JSONDecodeError is a ValueError
            raise _invalid() from None
        if not isinstance(value, list) or len(value) != len(self.parts) + 1 or value[0] != self.name:
            raise _invalid()
        try:
            return tuple(_load(part, item) for part, item in zip(self.parts, value[1:], strict=True))
        except (TypeError, ValueError):
            raise _invalid() from None


def _dump(part: Part, value: datetime | uuid.UUID | str | int) -> str | int:
    if part == "time" and isinstance(value, datetime):
        return value.isoformat()
    if part == "uuid" and isinstance(value, uuid.UUID):
        return str(value)
    if part == "text" and isinstance(value, str):
        return value
    if part == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"a {part} was expected in a cursor, got {value!r}")


def _load(part: Part, item: object) -> datetime | uuid.UUID | str | int:
    if part == "int":
        if not isinstance(item, int) or isinstance(item, bool) or not -(2**63) <= item < 2**63:
            raise TypeError("not a 64-bit integer")
        return item
    if not isinstance(item, str):
        raise TypeError("not a string")
    if part == "text":
        if not item or len(item) > MAX_CURSOR_CHARS or not item.isprintable():
            raise ValueError("not a key")
        return item
    if part == "uuid":
        return uuid.UUID(item)
    moment = datetime.fromisoformat(item)
    if moment.tzinfo is None:
        raise ValueError("a time without a timezone")
    return moment


def _invalid() -> ApiError:
    return ApiError(
        422, "invalid_cursor", "cursor is not a cursor of this list: pass a page's next_cursor as it is",
        details=[{"loc": ["query", "cursor"], "msg": "not a cursor of this list", "type": "invalid_cursor"}],
    )  # fmt: skip


def split_page(rows: Sequence[T], limit: int) -> tuple[Sequence[T], bool]:
    """A page of ``limit`` rows out of ``limit + 1`` read, and whether another page follows."""
    return rows[:limit], len(rows) > limit
