"""``client.users``: the tenant's users; lawful erasure of a user, and renewed consent."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.users import Consent, Erasure, UserPage, UserSummary
from memstream_client.pagination import every_item, every_item_async
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource


@endpoint("GET", "/v1/users", response=UserPage)
def list_users(
    q: str | None = None, *, agent_id: str | None = None, limit: int | None = None, cursor: str | None = None
) -> RequestParts:
    """A page of the tenant's users whose memory the key may see, in id order, each with how
    many live episodes it sees and when the newest was. ``q``: users whose id contains it,
    case-insensitively (``%`` and ``_`` are plain characters). ``agent_id``: as that agent sees
    them. ``limit``: 1-200 (gateway default 50). Pass the page's ``next_cursor`` as ``cursor``
    for the next one."""
    return RequestParts(query=query_params(q=q, agent_id=agent_id, limit=limit, cursor=cursor))


@endpoint("POST", "/v1/users/{user_id}/erase", response=Erasure)
def erase_user(user_id: str) -> RequestParts:
    """Erase the user from every table, vector and buffer, for good; nothing new of them is
    stored until ``consent``. Needs an admin key not bound to an agent. Not retried once it
    may have reached the gateway (a second erasure would report zero counts)."""
    return RequestParts(path_params={"user_id": user_id})


@endpoint("POST", "/v1/users/{user_id}/consent", response=Consent)
def record_consent(user_id: str) -> RequestParts:
    """Record the user's renewed consent after an erasure: turns dated after it are stored
    again. Needs an admin key not bound to an agent."""
    return RequestParts(path_params={"user_id": user_id})


class Users(SyncResource):
    list = SyncMethod(list_users)
    erase = SyncMethod(erase_user)
    consent = SyncMethod(record_consent)

    def iter_all(
        self, q: str | None = None, *, agent_id: str | None = None, limit: int | None = None
    ) -> Iterator[UserSummary]:
        """Every user ``list`` finds, page after page (``limit`` per request)."""
        return every_item(
            lambda cursor: self.list(q, agent_id=agent_id, limit=limit, cursor=cursor), lambda page: page.users
        )


class AsyncUsers(AsyncResource):
    list = AsyncMethod(list_users)
    erase = AsyncMethod(erase_user)
    consent = AsyncMethod(record_consent)

    def iter_all(
        self, q: str | None = None, *, agent_id: str | None = None, limit: int | None = None
    ) -> AsyncIterator[UserSummary]:
        """Every user ``list`` finds, page after page (``async for``)."""
        return every_item_async(
            lambda cursor: self.list(q, agent_id=agent_id, limit=limit, cursor=cursor), lambda page: page.users
        )
