"""``client.skills``: what worked before for a kind of task, and every skill of a user with its record."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.memory import SkillPage, SkillRecord, Skills
from memstream_client.pagination import every_item, every_item_async
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource


@endpoint("GET", "/v1/skills/best", response=Skills)
def best_skills(user_id: str, task: str, *, k: int | None = None) -> RequestParts:
    """The user's ``k`` (gateway default 5) skills best suited to ``task``, by similarity and
    success, with their steps and the last feedback."""
    return RequestParts(query=query_params(user_id=user_id, task=task, k=k))


@endpoint("GET", "/v1/skills", response=SkillPage)
def list_skills(
    user_id: str, *, agent_id: str | None = None, limit: int | None = None, cursor: str | None = None
) -> RequestParts:
    """A page of the user's skills in name order, each with attempts, successes, success rate,
    last feedback and when last used — from the outcomes the key may see. ``agent_id``: as that
    agent sees them. ``limit``: 1-200 (gateway default 50). Pass the page's ``next_cursor`` as
    ``cursor`` for the next one."""
    return RequestParts(query=query_params(user_id=user_id, agent_id=agent_id, limit=limit, cursor=cursor))


class SkillsResource(SyncResource):
    best = SyncMethod(best_skills)
    list = SyncMethod(list_skills)

    def iter_all(self, user_id: str, *, agent_id: str | None = None, limit: int | None = None) -> Iterator[SkillRecord]:
        """Every skill ``list`` finds, page after page (``limit`` per request)."""
        return every_item(
            lambda cursor: self.list(user_id, agent_id=agent_id, limit=limit, cursor=cursor),
            lambda page: page.skills,
        )


class AsyncSkillsResource(AsyncResource):
    best = AsyncMethod(best_skills)
    list = AsyncMethod(list_skills)

    def iter_all(
        self, user_id: str, *, agent_id: str | None = None, limit: int | None = None
    ) -> AsyncIterator[SkillRecord]:
        """Every skill ``list`` finds, page after page (``async for``)."""
        return every_item_async(
            lambda cursor: self.list(user_id, agent_id=agent_id, limit=limit, cursor=cursor),
            lambda page: page.skills,
        )
