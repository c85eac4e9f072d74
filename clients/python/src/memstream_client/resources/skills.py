"""``client.skills``: what worked before for a kind of task."""

from __future__ import annotations

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.memory import Skills
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource


@endpoint("GET", "/v1/skills/best", response=Skills)
def best_skills(user_id: str, task: str, *, k: int | None = None) -> RequestParts:
    """The user's ``k`` (gateway default 5) skills best suited to ``task``, by similarity and
    success, with their steps and the last feedback."""
    return RequestParts(query=query_params(user_id=user_id, task=task, k=k))


class SkillsResource(SyncResource):
    best = SyncMethod(best_skills)


class AsyncSkillsResource(AsyncResource):
    best = AsyncMethod(best_skills)
