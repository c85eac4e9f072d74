"""``client.audit``: the tenant's audit log, newest first."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import datetime

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.audit import AuditPage, AuditRecord
from memstream_client.pagination import every_item, every_item_async
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource


@endpoint("GET", "/v1/audit", response=AuditPage)
def list_audit(
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    action: str | None = None,
    user_id: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> RequestParts:
    """A page of the tenant's audit records, newest first (``limit``: 1-200, gateway default
    50). ``action``: one action (``memory.delete``) or every action under a prefix ending in a
    dot (``permission.``); ``user_id``: the records naming that user (erasure, consent,
    forgetting). Pass the page's ``next_cursor`` as ``cursor`` for the next one. Needs an
    ``admin`` key not bound to an agent."""
    return RequestParts(
        query=query_params(since=since, until=until, action=action, user_id=user_id, limit=limit, cursor=cursor)
    )


class Audit(SyncResource):
    list = SyncMethod(list_audit)

    def iter_all(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        action: str | None = None,
        user_id: str | None = None,
        limit: int | None = None,
    ) -> Iterator[AuditRecord]:
        """Every record ``list`` finds, page after page (``limit`` per request)."""
        return every_item(
            lambda cursor: self.list(
                since=since, until=until, action=action, user_id=user_id, limit=limit, cursor=cursor
            ),
            lambda page: page.records,
        )


class AsyncAudit(AsyncResource):
    list = AsyncMethod(list_audit)

    def iter_all(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        action: str | None = None,
        user_id: str | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[AuditRecord]:
        """Every record ``list`` finds, page after page (``async for``)."""
        return every_item_async(
            lambda cursor: self.list(
                since=since, until=until, action=action, user_id=user_id, limit=limit, cursor=cursor
            ),
            lambda page: page.records,
        )
