"""``/mcp``: memstream's MCP server over streamable HTTP, mounted on the gateway.

The tools are the SDK's MCP server (``memstream_client.mcp``, the same one ``memstream mcp``
serves on stdio). Each call is an ordinary gateway request made in-process with the caller's own
key, so the key's tenant, agent binding and scopes decide what a tool may see and do, exactly as
for REST, and every protection of the REST routes applies without being written twice.

Before the MCP app sees a request, the request guard has authenticated its key (a missing or
unknown key is a 401 before any body is read), charged its rate limits and capped its body
(``agents_gateway/limits.py``). The MCP layer then checks the same key through its own
``TokenVerifier``, so a tool always runs with a verified key in its context.

The transport is stateless and answers JSON to a POST (GET, a server-to-client stream, is 405):
no session lives in one gateway process, so any number of gateways behind a load balancer serve
``/mcp``, and no request outlives its answer. Every request needs a key, which a
page in a victim's browser does not have: DNS-rebinding checks of the Host header are off, so
that the gateway answers under whatever name it is deployed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agents_gateway.auth import INTERNAL_SCOPE_KEY
from agents_gateway.limits import MCP_PATH

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger(__name__)

#: The base URL of the gateway's calls to itself (never resolved: the transport is in-process).
LOOPBACK_URL = "http://memstream.gateway"


class _Internal:
    """The gateway app, marked as called by itself (see ``INTERNAL_SCOPE_KEY``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app({**scope, INTERNAL_SCOPE_KEY: True}, receive, send)


class McpMount:
    """The mounted MCP app and what it needs while the gateway runs."""

    def __init__(self, app: FastAPI) -> None:
        from mcp.server.auth.provider import AccessToken
        from mcp.server.auth.settings import AuthSettings
        from mcp.server.transport_security import TransportSecuritySettings

        from memstream_client import AsyncMemstream
        from memstream_client.mcp import build_server

        self._loopback = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=_Internal(app)), base_url=LOOPBACK_URL, timeout=60.0
        )
        loopback = AsyncMemstream(base_url=LOOPBACK_URL, api_key="-", http_client=self._loopback, max_retries=0)

        class KeyVerifier:
            """The gateway's own API keys as MCP bearer tokens."""

            async def verify_token(self, token: str) -> AccessToken | None:
                principal = await app.state.gateway.auth.verify(token)
                if principal is None:
                    return None
                return AccessToken(
                    token=token,
                    client_id=principal.key_id,
                    scopes=sorted(principal.scopes),
                    subject=principal.tenant_id,
                )

        def client_for(_ctx: Any) -> AsyncMemstream:
            from mcp.server.auth.middleware.auth_context import get_access_token

            token = get_access_token()
            if token is None:  # the bearer middleware lets no request through without one
                raise RuntimeError("an MCP call without a verified key")
            return loopback.with_options(api_key=token.token)

        self.server = build_server(
            client_for,
            token_verifier=KeyVerifier(),
            # Required by the SDK to install its bearer check; memstream issues no OAuth tokens.
            auth=AuthSettings(issuer_url=LOOPBACK_URL, resource_server_url=None),  # type: ignore[arg-type]
        )
        self.asgi = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The MCP session manager while the gateway runs. It holds an anyio task group, which
        must be left by the task that entered it: it gets a task of its own, because a lifespan
        may be entered and left by different tasks (a test's fixtures are)."""
        started, stop = asyncio.Event(), asyncio.Event()

        async def serve() -> None:
            async with self.server.session_manager.run():
                started.set()
                await stop.wait()

        task = asyncio.get_running_loop().create_task(serve(), name="mcp-sessions")
        waiting = asyncio.ensure_future(started.wait())
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if task.done():
            task.result()  # it failed to start: say why
        try:
            yield
        finally:
            stop.set()
            try:
                await task
            finally:
                await self._loopback.aclose()


class _BearerFromApiKey:
    """The MCP app's bearer check reads ``Authorization`` only; a caller that presented its key
    as ``X-API-Key`` (which the request guard has already verified) is passed on as a bearer.
    (A class, not a function: Starlette takes a plain function for a request handler.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        names = {name for name, _ in scope["headers"]}
        if b"authorization" not in names and b"x-api-key" in names:
            key = next(value for name, value in scope["headers"] if name == b"x-api-key").strip()
            scope = {**scope, "headers": [*scope["headers"], (b"authorization", b"Bearer " + key)]}
        await self.app(scope, receive, send)


def mount_mcp(app: FastAPI) -> McpMount | None:
    """Serve MCP at ``/mcp`` when the ``mcp`` extra is installed; say so once when it is not."""
    try:
        mount = McpMount(app)
    except ImportError as exc:
        log.info("MCP over HTTP is off (%s): pip install 'memstream[mcp]' to serve /mcp", exc.name)
        return None
    # POST only: a stateless server has no stream for GET to hold open (the protocol's answer to
    # GET is then 405), and no session for DELETE to end. An open stream per request would let
    # one key hold the gateway's connections (and its concurrency limit) for everyone.
    app.router.routes.append(Route(MCP_PATH, endpoint=_BearerFromApiKey(mount.asgi), methods=["POST"]))
    return mount
