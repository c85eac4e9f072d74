"""Walking a paginated list to its end: every item of every page, one page at a time.

The list endpoints (``users.list``, ``memories.list``, ``skills.list``, ``audit.list``) answer a
page and a ``next_cursor`` (None on the last page); their ``iter_all`` methods pass each page's
cursor to the next call, so a caller writes a plain ``for`` loop. The gateway's cursors are
keyset positions: rows added while a walk is under way never make it repeat or skip a row.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")


class Page(Protocol):
    @property
    def next_cursor(self) -> str | None: ...


P = TypeVar("P", bound=Page)


def every_item(fetch: Callable[[str | None], P], items: Callable[[P], Sequence[T]]) -> Iterator[T]:
    """The items of ``fetch(None)``, then of each next page, until one has no ``next_cursor``."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from items(page)
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def every_item_async(
    fetch: Callable[[str | None], Awaitable[P]], items: Callable[[P], Sequence[T]]
) -> AsyncIterator[T]:
    """``every_item`` for ``AsyncMemstream``: an async iterator (``async for``)."""
    cursor: str | None = None
    while True:
        page = await fetch(cursor)
        for item in items(page):
            yield item
        if page.next_cursor is None:
            return
        cursor = page.next_cursor
