"""What the SDK's integration tests share (``test_sdk.py``, sync over real HTTP, and
``test_sdk_async.py``, async in-process): the conversation they publish, a blocking wait
for the sync tests, a transport that loses the first answer to ``POST /v1/turns``, and row
counts in Postgres."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from ops.demo import PROJECT, SESSION_1
from tests.fixtures.stack import RunningStack

T = TypeVar("T")
AGENT = "agent-1"
TURNS_PATH = "/v1/turns"
#: The answer a lost response is replaced by: a 503, as a proxy answers when the gateway's never came.
LOST = {"error": {"code": "unavailable", "message": "the upstream answer was lost", "details": []}}


def seed_turns(user: str, session: str) -> list[dict[str, Any]]:
    """The demo's first session (preferences, a project's stack, a tool call), as dicts the SDK takes."""
    turns: list[dict[str, Any]] = []
    for role, content, project in SESSION_1:
        turn: dict[str, Any] = {"agent_id": AGENT, "user_id": user, "session_id": session, "role": role,
                                "content": content}  # fmt: skip
        if project:
            turn["project_id"] = project
        if role == "tool":
            turn |= {"tool_name": "kubectl", "tool_status": "success"}
        turns.append(turn)
    return turns


def one_turn(user: str, session: str, content: str) -> dict[str, Any]:
    return {"agent_id": AGENT, "user_id": user, "session_id": session, "role": "user", "content": content}


def wait_until(check: Callable[[], T], *, timeout_s: float = 60.0, interval_s: float = 0.2) -> T:
    """Call ``check`` until it returns something truthy, and return that; fail with the last value."""
    deadline = time.monotonic() + timeout_s
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s (last value: {last!r})")
        time.sleep(interval_s)


def rows_with_content(stack: RunningStack, tenant: str, content: str) -> tuple[int, int]:
    """Rows of ``content`` in the event log and in episodes."""
    with stack.db(tenant) as conn:
        logged = conn.execute(
            "SELECT count(*) FROM event_log WHERE tenant_id = %s AND content = %s", (tenant, content)
        ).fetchone()
        episodes = conn.execute(
            "SELECT count(*) FROM episodes WHERE tenant_id = %s AND content = %s", (tenant, content)
        ).fetchone()
    assert logged is not None and episodes is not None
    return int(str(logged[0])), int(str(episodes[0]))


def stored(stack: RunningStack, tenant: str, event_id: uuid.UUID) -> bool:
    with stack.db(tenant) as conn:
        row = conn.execute("SELECT 1 FROM episodes WHERE tenant_id = %s AND event_id = %s", (tenant, event_id))
        return row.fetchone() is not None


class LoseFirstTurnsAnswer(httpx.BaseTransport):
    """Forwards every request; the first ``POST /v1/turns`` reaches the gateway (and is
    published), but its answer is replaced by a 503, as when a response is lost on the way."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.sent: list[bytes] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST" and request.url.path == TURNS_PATH:
            self.sent.append(request.content)
            if len(self.sent) == 1:
                response.read()
                response.close()
                return httpx.Response(503, json=LOST, headers={"Retry-After": "0"}, request=request)
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncLoseFirstTurnsAnswer(httpx.AsyncBaseTransport):
    """``LoseFirstTurnsAnswer`` for the async client."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.sent: list[bytes] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.method == "POST" and request.url.path == TURNS_PATH:
            self.sent.append(request.content)
            if len(self.sent) == 1:
                await response.aread()
                await response.aclose()
                return httpx.Response(503, json=LOST, headers={"Retry-After": "0"}, request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


__all__ = ["AGENT", "PROJECT", "one_turn", "rows_with_content", "seed_turns", "stored", "wait_until"]
