"""MEMSTREAM_OPS_TOKEN on a gateway with its stores: /metrics answers the token only (and counts
the refusals), the probes stay open, and an API key does not open /metrics."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import httpx
from fastapi import FastAPI
from pydantic import SecretStr
from starlette.routing import BaseRoute

from agents_gateway.app import create_app
from agents_gateway.routes.ui import assets
from memstream.settings import Settings
from tests.fixtures.stack import RunningStack, client_for
from tests.integration.scrape import Scrape

TOKEN = "ops-token-" + "7" * 32


def client_at(app: FastAPI, address: str) -> httpx.AsyncClient:
    """A client of the in-process gateway, connecting from ``address``."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=(address, 40000)), base_url="http://gateway")


async def test_metrics_answer_the_ops_token_only(stack: RunningStack, tenant: str) -> None:
    app = create_app(Settings(**{**stack.settings.model_dump(), "ops_token": SecretStr(TOKEN)}))
    async with app.router.lifespan_context(app):
        async with client_for(app, None) as anonymous, client_for(app, stack.key(tenant)) as keyed:
            assert (await anonymous.get("/metrics")).status_code == 401
            assert (await anonymous.get("/metrics", headers={"authorization": "Bearer nope"})).status_code == 401
            assert (await keyed.get("/metrics")).status_code == 401, "an API key is not the ops token"
            scraped = await anonymous.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
            assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
            assert Scrape(scraped.text).value("memstream_gateway_auth_failures_total", status="401") >= 3
            assert (await anonymous.get("/readyz")).status_code == 200, "the probes need no token"
            assert (await anonymous.get("/healthz")).status_code == 200


async def test_wrong_ops_tokens_cost_the_address_like_wrong_keys(stack: RunningStack, tenant: str) -> None:
    """Guessing the token is throttled per address as guessing a key is: 401s, then 429s; the
    right token from another address still gets in."""
    burst = 3
    overrides = {"ops_token": SecretStr(TOKEN), "addr_rate_limit_burst": burst, "addr_rate_limit_per_s": 0.05}
    app = create_app(Settings(**{**stack.settings.model_dump(), **overrides}))
    guesser, operator = f"10.77.{len(tenant)}.{ord(tenant[-1])}", "10.78.0.1"
    async with app.router.lifespan_context(app):
        async with client_at(app, guesser) as guessing, client_at(app, operator) as operating:
            statuses = [
                (await guessing.get("/metrics", headers={"authorization": f"Bearer guess-{i}"})).status_code
                for i in range(2 * burst)
            ]
            assert statuses[:burst] == [401] * burst and statuses[-2:] == [429, 429], statuses
            refused = await guessing.get("/metrics", headers={"authorization": "Bearer again"})
            assert refused.json()["error"]["code"] == "address_rate_limited"
            assert int(refused.headers["retry-after"]) >= 1
            assert (await operating.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})).status_code == 200


def routes(found: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    """Every route, those of the included routers too."""
    for route in found:
        included = getattr(route, "original_router", None)  # FastAPI's wrapper of an included router
        yield from routes(included.routes) if included is not None else (route,)


async def test_a_stray_slash_is_a_404_not_a_redirect_to_the_host_header(stack: RunningStack, tenant: str) -> None:
    """Every path the gateway serves (its routes in every method, /mcp, the API docs, each file
    of /ui) answers 404 with a slash after it, never a redirect; ``/ui/`` answered the page."""
    settings = {**stack.settings.model_dump(), "ops_token": SecretStr(TOKEN), "gateway_docs": True}
    app = create_app(Settings(**settings))
    paths = {("GET", "/ui/"), ("GET", "/ui/views/")} | {("GET", f"/ui/{name}/") for name in assets()}
    for route in routes(app.routes):
        path = re.sub(r"\{[^}:]+(:path)?\}", "x", getattr(route, "path", ""))
        paths |= {(method, path + "/") for method in getattr(route, "methods", None) or ()}
    assert {("GET", "/metrics/"), ("POST", "/mcp/"), ("GET", "/docs/"), ("POST", "/v1/turns/")} <= paths, paths
    async with app.router.lifespan_context(app), client_for(app, stack.key(tenant)) as keyed:
        for method, path in sorted(paths):
            response = await keyed.request(method, path, headers={"host": "evil.example"})
            assert response.status_code == 404, (method, path, response.status_code)
            assert "location" not in response.headers, path
