"""``AsyncMemstream``: the gateway, for asyncio (the same API as ``Memstream``, awaited)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Self, TypeVar

import httpx

from memstream_client.config import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S, ClientOptions, resolve_options
from memstream_client.core import Done, RequestCore
from memstream_client.endpoint import Call
from memstream_client.resource import AsyncMethod
from memstream_client.resources.audit import AsyncAudit
from memstream_client.resources.context import AsyncContextResource
from memstream_client.resources.entities import AsyncEntities
from memstream_client.resources.graph import AsyncGraph
from memstream_client.resources.keys import whoami
from memstream_client.resources.memories import AsyncMemories
from memstream_client.resources.permissions import AsyncPermissions, AsyncRulesResource
from memstream_client.resources.search import search_memory
from memstream_client.resources.sessions import AsyncSessions
from memstream_client.resources.skills import AsyncSkillsResource
from memstream_client.resources.tenant import AsyncTenant
from memstream_client.resources.tool_events import AsyncToolEvents
from memstream_client.resources.turns import AsyncTurns
from memstream_client.resources.users import AsyncUsers

T = TypeVar("T")


class AsyncMemstream:
    """An asyncio client of the memstream gateway (every method is awaited).

    ``base_url``: the argument, else an injected ``http_client``'s base URL, else
    ``$MEMSTREAM_BASE_URL``, else ``http://127.0.0.1:8080`` (what ``memstream up`` serves).
    ``api_key``: the argument, else ``$MEMSTREAM_API_KEY``; a ``/v1`` call without one raises
    ``MissingAPIKeyError`` before anything is sent. ``timeout_s`` applies to each attempt;
    ``max_retries`` counts the attempts after the first (see ``memstream_client.retries``).
    An injected ``http_client`` is used as is and left open; one the client makes itself is
    closed by ``close()`` or at the end of a ``with`` block.
    """

    search = AsyncMethod(search_memory)
    whoami = AsyncMethod(whoami)

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
            raise TypeError(f"http_client must be an httpx.AsyncClient (Memstream takes an httpx.Client), "
                            f"not {type(http_client).__name__}")  # fmt: skip
        options = resolve_options(
            base_url, api_key, timeout_s=timeout_s, max_retries=max_retries, headers=headers,
            client_base_url=str(http_client.base_url) if http_client is not None else None,
        )  # fmt: skip
        owned = http_client is None
        http = httpx.AsyncClient(timeout=options.timeout_s) if http_client is None else http_client
        self._bind(options, http, owns_http=owned, sleep=asyncio.sleep)

    def _bind(
        self,
        options: ClientOptions,
        http: httpx.AsyncClient,
        *,
        owns_http: bool,
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._core = RequestCore(options)
        self._http = http
        self._owns_http = owns_http
        #: How the client waits between attempts (a test may replace it).
        self._sleep = sleep
        self.turns = AsyncTurns(self)
        self.sessions = AsyncSessions(self)
        self.context = AsyncContextResource(self)
        self.entities = AsyncEntities(self)
        self.graph = AsyncGraph(self)
        self.skills = AsyncSkillsResource(self)
        self.memories = AsyncMemories(self)
        self.tool_events = AsyncToolEvents(self)
        self.permissions = AsyncPermissions(self)
        self.rules = AsyncRulesResource(self)
        self.tenant = AsyncTenant(self)
        self.users = AsyncUsers(self)
        self.audit = AsyncAudit(self)

    @property
    def options(self) -> ClientOptions:
        return self._core.options

    def with_options(
        self, *, timeout_s: float | None = None, max_retries: int | None = None, api_key: str | None = None
    ) -> Self:
        """A client with these options changed, sharing this one's connections (closing it
        leaves them open). E.g. ``await client.with_options(max_retries=0).turns.publish(turn)``."""
        clone = object.__new__(type(self))
        options = self._core.options.replace(timeout_s=timeout_s, max_retries=max_retries, api_key=api_key)
        clone._bind(options, self._http, owns_http=False, sleep=self._sleep)
        return clone

    async def _send(self, call: Call[T]) -> T:
        request = self._core.request(self._http, call)
        attempt = 0
        while True:
            try:
                response = await self._http.send(request)
            except httpx.TransportError as exc:
                delay_s = self._core.after_failure(call, attempt, exc).delay_s
            else:
                outcome = self._core.after_response(call, attempt, response)
                if isinstance(outcome, Done):
                    return outcome.value
                delay_s = outcome.delay_s
            await self._sleep(delay_s)
            attempt += 1

    async def close(self) -> None:
        """Close the HTTP client, if this client made it."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncMemstream(base_url={self._core.options.base_url!r})"
