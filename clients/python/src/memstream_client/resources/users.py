"""``client.users``: lawful erasure of a user, and renewed consent."""

from __future__ import annotations

from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.users import Consent, Erasure
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource


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
    erase = SyncMethod(erase_user)
    consent = SyncMethod(record_consent)


class AsyncUsers(AsyncResource):
    erase = AsyncMethod(erase_user)
    consent = AsyncMethod(record_consent)
