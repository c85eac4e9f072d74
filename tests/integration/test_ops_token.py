"""MEMSTREAM_OPS_TOKEN on a gateway with its stores: /metrics answers the token only (and counts
the refusals), the probes stay open, and an API key does not open /metrics."""

from __future__ import annotations

from pydantic import SecretStr

from agents_gateway.app import create_app
from memstream.settings import Settings
from tests.fixtures.stack import RunningStack, client_for
from tests.integration.scrape import Scrape

TOKEN = "ops-token-" + "7" * 32


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
