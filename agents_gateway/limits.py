"""What the gateway refuses before it reads a request: bodies over their cap (413), bodies that
arrive too slowly (408), headers that arrive too slowly (408), and callers without a valid key
(401, or 429 for an address that keeps failing) — all without buffering the body.

``RequestGuard`` is a pure ASGI middleware (it wraps ``receive``): FastAPI reads a body
parameter *before* it runs the route's dependencies, so authenticating in a dependency alone
would let a caller without a key make the gateway buffer whatever it sends. The guard
authenticates every request for a ``/v1`` route first and hands the principal on to the
route's dependency (``agents_gateway.auth.scoped``); only then may the body be read, and never
more than its cap. The operational endpoints (``/metrics``, the API document) need the ops token
when one is set (``agents_gateway/ops_token.py``).

``server_options`` configures uvicorn: the header-size cap, the keep-alive timeout, the
concurrency cap, and an h11 protocol with a header-read timeout (uvicorn has none of its own:
a client that opens a connection and sends a header byte every few seconds would hold it
forever) that reads each request's framing one way only (``framing.py``)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import Counter as Tally
from functools import partial
from typing import Any

import h11
import orjson
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from agents_gateway.auth import INTERNAL_SCOPE_KEY, PRINCIPAL_SCOPE_KEY, Principal
from agents_gateway.errors import error_response
from agents_gateway.framing import UnambiguousConnection
from agents_gateway.ops_token import operational, ops_refusal
from agents_gateway.state import gateway_state
from memstream.settings import Settings

log = logging.getLogger(__name__)

TURNS_PATH = "/v1/turns"


MCP_PATH = "/mcp"


def body_cap(settings: Settings, path: str) -> int:
    """Bytes a request body to ``path`` may have: ``max_body_bytes`` for turns (batches of up
    to 500, also through MCP's ``remember``), ``max_json_body_bytes`` for every other endpoint
    (small JSON documents)."""
    return settings.max_body_bytes if path in (TURNS_PATH, MCP_PATH) else settings.max_json_body_bytes


def authenticated(path: str) -> bool:
    """Whether a path needs an API key before anything else happens: every /v1 route and MCP."""
    return path.startswith("/v1/") or path == MCP_PATH


class _BodyRefused(Exception):
    """Raised from the wrapped ``receive``: the body is over its cap or too slow."""


class InFlight:
    """Requests of each key and each tenant in flight in this process. The rate limits count
    requests as they start; a request that then sends its body slowly holds a connection for up
    to ``body_read_timeout_s``, so without this one key sending 49 requests/s (under its rate)
    held every connection of the process and the others got 503. Over its share, a request is
    refused at once (429), before its body is read."""

    def __init__(self, *, per_key: int, per_tenant: int) -> None:
        self.per_key = per_key
        self.per_tenant = per_tenant
        self._keys: Tally[str] = Tally()
        self._tenants: Tally[str] = Tally()

    def enter(self, principal: Principal) -> Response | None:
        """None when the request may go on (and is counted until ``leave``), else the 429."""
        if self._keys[principal.key_id] >= self.per_key:
            return _busy(f"this key already has {self.per_key} requests in flight")
        if self._tenants[principal.tenant_id] >= self.per_tenant:
            return _busy(f"the tenant already has {self.per_tenant} requests in flight (all its keys together)")
        self._keys[principal.key_id] += 1
        self._tenants[principal.tenant_id] += 1
        return None

    def leave(self, principal: Principal) -> None:
        for tally, name in ((self._keys, principal.key_id), (self._tenants, principal.tenant_id)):
            tally[name] -= 1
            if tally[name] <= 0:
                del tally[name]


def _busy(message: str) -> Response:
    return error_response(
        429, "too_many_in_flight", f"{message}; wait for an answer before sending more", headers={"Retry-After": "1"}
    )


class RequestGuard:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.in_flight = InFlight(per_key=settings.max_in_flight_per_key, per_tenant=settings.max_in_flight_per_tenant)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        cap = body_cap(self.settings, scope["path"])
        headers = Headers(scope=scope)
        declared = headers.get("content-length")
        has_body = headers.get("transfer-encoding") is not None or (declared is not None and declared != "0")
        if declared is not None and declared.strip().isdigit() and int(declared) > cap:
            await _answer(scope, send, _too_large(cap, f"body of {int(declared)} bytes"), close=True)
            return
        header_bytes = sum(len(name) + len(value) + 4 for name, value in scope["headers"])
        if header_bytes > self.settings.max_header_bytes:  # h11 caps what arrives in pieces, not in one read
            limit = self.settings.max_header_bytes
            message = f"the request headers take {header_bytes} bytes; the limit is {limit}"
            await _answer(scope, send, error_response(431, "headers_too_large", message), close=True)
            return
        if self.settings.ops_token is not None and operational(scope["path"]):
            refused = ops_refusal(headers, self.settings.ops_token)
            if refused is not None:
                # A wrong token costs the address what a wrong API key does (429 once it keeps failing).
                refused = await self._charged(scope, receive) or refused
                _count_refusal(scope, refused.status_code)
                await _answer(scope, send, refused, close=has_body)
                return
        held: Principal | None = None
        if authenticated(scope["path"]) and _routed(scope):
            response = await self._authenticate(scope, receive)
            if response is None and has_body and not _json(headers):
                response = error_response(415, "unsupported_media_type", "send the body as application/json")
            if response is None and not scope.get(INTERNAL_SCOPE_KEY):
                held = scope[PRINCIPAL_SCOPE_KEY]
                response = self.in_flight.enter(held)
                if response is not None:
                    held = None
            if response is not None:
                await _answer(scope, send, response, close=has_body)
                return
        try:
            await self._guarded(scope, receive, send, started=started, cap=cap, has_body=has_body)
        finally:
            if held is not None:
                self.in_flight.leave(held)

    async def _guarded(
        self, scope: Scope, receive: Receive, send: Send, *, started: float, cap: int, has_body: bool
    ) -> None:

        deadline = started + self.settings.body_read_timeout_s
        received = 0
        body_done = not has_body
        refusal: Response | None = None
        answered = False

        async def guarded_receive() -> Message:
            nonlocal received, body_done, refusal
            if refusal is not None:
                raise _BodyRefused
            if body_done:  # what follows the body (http.disconnect) may take as long as it likes
                return await receive()
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError:
                timeout = self.settings.body_read_timeout_s
                refusal = error_response(
                    408, "request_timeout", f"the request body did not arrive within {timeout:g} s"
                )
                raise _BodyRefused from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
                    refusal = _too_large(cap, "body")
                    raise _BodyRefused
                body_done = not message.get("more_body", False)
            else:
                body_done = True
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal answered
            if refusal is not None:  # the app's own answer to the exception it got is replaced
                if not answered:
                    answered = True
                    await _answer(scope, send, refusal, close=True)
                return
            if message["type"] == "http.response.start":
                answered = True
            await send(message)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except Exception:
            if refusal is None:
                raise
        if refusal is not None and not answered:
            await _answer(scope, send, refusal, close=True)

    async def _authenticate(self, scope: Scope, receive: Receive) -> Response | None:
        """None once the caller is authenticated (the principal is left in the scope), else
        the error response, made by the app's own exception handlers (401, 429, 503, ...)."""
        try:
            connection = HTTPConnection(scope)
            scope[PRINCIPAL_SCOPE_KEY] = await gateway_state(connection).auth.authenticate(connection)
        except Exception as exc:
            return await _handled(scope, receive, exc)
        return None

    async def _charged(self, scope: Scope, receive: Receive) -> Response | None:
        """None while the caller's address may still fail, else its 429 (or 503 without Redis).
        An app not started (no lifespan: no stores, nothing served) has no bucket to charge."""
        if getattr(scope["app"].state, "gateway", None) is None:
            return None
        try:
            connection = HTTPConnection(scope)
            await gateway_state(connection).auth.charge_address(connection)
        except Exception as exc:
            return await _handled(scope, receive, exc)
        return None


async def _handled(scope: Scope, receive: Receive, exc: Exception) -> Response:
    """The app's own exception handler's answer to ``exc`` (re-raised when it has none)."""
    handler = _handler_for(scope["app"], exc)
    if handler is None:
        raise exc
    response = handler(Request(scope, receive), exc)
    if inspect.isawaitable(response):
        response = await response
    assert isinstance(response, Response)
    return response


def _count_refusal(scope: Scope, status: int) -> None:
    """Count a refusal the guard makes itself in ``memstream_gateway_auth_failures_total``."""
    state = getattr(scope["app"].state, "gateway", None)
    if state is not None:
        state.metrics.auth_failures.labels(status=str(status)).inc()


def _routed(scope: Scope) -> bool:
    """Whether a route answers this method and path (unknown paths keep their 404/405)."""
    probe = {k: v for k, v in scope.items() if k != "fastapi"}  # matching may note things there
    return any(route.matches(probe)[0] is Match.FULL for route in scope["app"].router.routes)


def _handler_for(app: Any, exc: Exception) -> Any:
    handlers: dict[Any, Any] = app.exception_handlers
    for cls in type(exc).__mro__:
        if cls in handlers:
            return handlers[cls]
    return None


def _json(headers: Headers) -> bool:
    """Whether the body is declared as JSON (``application/json``, any parameters)."""
    return headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"


def _too_large(cap: int, what: str) -> Response:
    return error_response(413, "payload_too_large", f"{what} exceeds the limit of {cap} bytes for this endpoint")


async def _answer(scope: Scope, send: Send, response: Response, *, close: bool) -> None:
    """Send ``response`` without reading the request; ``close``: the body (if any) is left
    unread, so the connection cannot carry another request."""
    if close:
        response.headers["connection"] = "close"

    async def no_body() -> Message:  # a response never reads the request
        return {"type": "http.disconnect"}

    await response(scope, no_body, send)


# --- uvicorn ---------------------------------------------------------------------------------


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for a request's headers: from the connection's
    start, and from each response for the next request. A client that has sent part of a
    request by then gets 408; one that sent nothing is disconnected. A request whose framing
    can be read two ways gets 400 and the connection is closed (``UnambiguousConnection``)."""

    header_timeout_s: float = 10.0
    _header_timer: asyncio.TimerHandle | None = None
    _header_cycle: object = None
    _header_bytes = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit = self.config.h11_max_incomplete_event_size  # None: h11's default, as for uvicorn's
        self.conn = (
            UnambiguousConnection(h11.SERVER)
            if limit is None
            else UnambiguousConnection(h11.SERVER, max_incomplete_event_size=limit)
        )
        # uvicorn answers a request over its concurrency cap with a text/plain 503 of its own;
        # the same cap answered here, in the error shape and with Retry-After.
        self._cap, self.limit_concurrency = self.limit_concurrency, None
        if self._cap is not None:
            self.app = partial(self._capped, self.app)

    async def _capped(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        # As uvicorn counts: this connection is among ``connections``, this request's task
        # among ``tasks`` already (uvicorn checked before creating it).
        if len(self.connections) >= self._cap or len(self.tasks) > self._cap:  # type: ignore[operator]
            log.warning("over the concurrency cap of %s connections or requests: 503", self._cap)
            refusal = error_response(503, "over_capacity", "this gateway process is at its concurrency cap: retry",
                                     headers={"retry-after": "1", "connection": "close"})  # fmt: skip
            await refusal(scope, receive, send)
            return
        await app(scope, receive, send)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._header_bytes += len(data)
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self._header_timer is not None and self.cycle is not self._header_cycle:
            self._disarm_header_timer()  # a request started: its headers are complete

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_cycle = self.cycle
        self._header_bytes = 0
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timeout)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.cycle is not self._header_cycle or self.transport.is_closing():
            return
        if self._header_bytes:
            message = f"the request headers did not arrive within {self.header_timeout_s:g} s"
            self.transport.write(_raw_error(408, "Request Timeout", "request_timeout", message))
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse, or whose framing is ambiguous, gets the error shape too
        (uvicorn answers text/plain, and says no more than "Invalid HTTP request received.")."""
        reason = getattr(self.conn, "refusal", None) or msg
        self.transport.write(_raw_error(400, "Bad Request", "malformed_http", f"not a valid HTTP request: {reason}"))
        self.transport.close()


def _raw_error(status: int, phrase: str, code: str, message: str) -> bytes:
    """A complete error response, in the error shape, for the protocol layer (no ASGI app yet)."""
    body = orjson.dumps({"error": {"code": code, "message": message, "details": []}})
    head = (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


def configure_protocol(settings: Settings) -> None:
    """The header deadline of this process's connections (``create_app`` sets it, in each
    gateway process: uvicorn's workers import the protocol by name, so it is one class)."""
    GuardedH11Protocol.header_timeout_s = settings.header_read_timeout_s


def server_options(settings: Settings) -> dict[str, Any]:
    """uvicorn.run's keyword arguments for the gateway's limits (docs/api.md, "Request limits")."""
    return {
        "http": f"{GuardedH11Protocol.__module__}:{GuardedH11Protocol.__qualname__}",
        "h11_max_incomplete_event_size": settings.max_header_bytes,
        "timeout_keep_alive": settings.keep_alive_timeout_s,
        "limit_concurrency": settings.gateway_max_concurrency,
        # X-Forwarded-For only from the proxies named: by default no one, not even a local
        # process, can choose the address the per-address limit counts.
        "proxy_headers": bool(settings.forwarded_allow_ips),
        "forwarded_allow_ips": settings.forwarded_allow_ips or None,
    }
