"""``Memstream``: the gateway, synchronously (``AsyncMemstream`` is the same, awaited)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Self, TypeVar

import httpx

from memstream_client.config import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S, ClientOptions, resolve_options
from memstream_client.core import Done, RequestCore
from memstream_client.endpoint import Call
from memstream_client.resource import SyncMethod
from memstream_client.resources.audit import Audit
from memstream_client.resources.context import ContextResource
from memstream_client.resources.entities import Entities
from memstream_client.resources.graph import Graph
from memstream_client.resources.keys import whoami
from memstream_client.resources.memories import Memories
from memstream_client.resources.permissions import Permissions, RulesResource
from memstream_client.resources.search import search_memory
from memstream_client.resources.sessions import Sessions
from memstream_client.resources.skills import SkillsResource
from memstream_client.resources.tenant import Tenant
from memstream_client.resources.tool_events import ToolEvents
from memstream_client.resources.turns import Turns
from memstream_client.resources.users import Users

T = TypeVar("T")


class Memstream:
    """A client of the memstream gateway.

    ``base_url``: the argument, else an injected ``http_client``'s base URL, else
    ``$MEMSTREAM_BASE_URL``, else ``http://127.0.0.1:8080`` (what ``memstream up`` serves).
    ``api_key``: the argument, else ``$MEMSTREAM_API_KEY``; a ``/v1`` call without one raises
    ``MissingAPIKeyError`` before anything is sent. ``timeout_s`` applies to each attempt;
    ``max_retries`` counts the attempts after the first (see ``memstream_client.retries``).
    An injected ``http_client`` is used as is and left open; one the client makes itself is
    closed by ``close()`` or at the end of a ``with`` block.
    """

    search = SyncMethod(search_memory)
    whoami = SyncMethod(whoami)

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.Client | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if http_client is not None and not isinstance(http_client, httpx.Client):
            raise TypeError(f"http_client must be an httpx.Client (AsyncMemstream takes an httpx.AsyncClient), "
                            f"not {type(http_client).__name__}")  # fmt: skip
        options = resolve_options(
            base_url, api_key, timeout_s=timeout_s, max_retries=max_retries, headers=headers,
            client_base_url=str(http_client.base_url) if http_client is not None else None,
        )  # fmt: skip
        owned = http_client is None
        http = httpx.Client(timeout=options.timeout_s) if http_client is None else http_client
        self._bind(options, http, owns_http=owned, sleep=time.sleep)

    def _bind(
        self, options: ClientOptions, http: httpx.Client, *, owns_http: bool, sleep: Callable[[float], None]
    ) -> None:
        self._core = RequestCore(options)
        self._http = http
        self._owns_http = owns_http
        #: How the client waits between attempts (a test may replace it).
        self._sleep = sleep
        self.turns = Turns(self)
        self.sessions = Sessions(self)
        self.context = ContextResource(self)
        self.entities = Entities(self)
        self.graph = Graph(self)
        self.skills = SkillsResource(self)
        self.memories = Memories(self)
        self.tool_events = ToolEvents(self)
        self.permissions = Permissions(self)
        self.rules = RulesResource(self)
        self.tenant = Tenant(self)
        self.users = Users(self)
        self.audit = Audit(self)

    @property
    def options(self) -> ClientOptions:
        return self._core.options

    def with_options(
        self, *, timeout_s: float | None = None, max_retries: int | None = None, api_key: str | None = None
    ) -> Self:
        """A client with these options changed, sharing this one's connections (closing it
        leaves them open). E.g. ``client.with_options(max_retries=0).turns.publish(turn)``."""
        clone = object.__new__(type(self))
        options = self._core.options.replace(timeout_s=timeout_s, max_retries=max_retries, api_key=api_key)
        clone._bind(options, self._http, owns_http=False, sleep=self._sleep)
        return clone

    def _send(self, call: Call[T]) -> T:
        request = self._core.request(self._http, call)
        attempt = 0
        while True:
            try:
                response = self._http.send(request)
            except httpx.TransportError as exc:
                delay_s = self._core.after_failure(call, attempt, exc).delay_s
            else:
                outcome = self._core.after_response(call, attempt, response)
                if isinstance(outcome, Done):
                    return outcome.value
                delay_s = outcome.delay_s
            self._sleep(delay_s)
            attempt += 1

    def close(self) -> None:
        """Close the HTTP client, if this client made it."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memstream(base_url={self._core.options.base_url!r})"
