"""Every failure answers in the error shape, a code defect included (a JSON 500, never a
text/plain page), and a value the store refuses is the caller's 422."""

import httpx
import orjson
import psycopg
from fastapi import FastAPI

from agents_gateway.errors import install_error_handlers
from streams.audit_relay import detail_json


def app_that_fails() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/defect")
    async def defect() -> None:
        raise RuntimeError("a bug")

    @app.get("/out-of-range")
    async def out_of_range() -> None:
        raise psycopg.errors.NumericValueOutOfRange("value out of range: underflow")

    return app


async def test_a_code_defect_is_a_json_500_and_a_refused_value_a_422() -> None:
    transport = httpx.ASGITransport(app=app_that_fails(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        defect = await client.get("/defect")
        assert defect.status_code == 500 and defect.headers["content-type"] == "application/json"
        assert defect.json()["error"]["code"] == "internal_error" and "a bug" not in defect.text
        refused = await client.get("/out-of-range")
        assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_value"
        assert "underflow" not in refused.text


def test_an_audit_detail_with_any_number_jsonb_holds_is_relayed() -> None:
    """A retention setting of 1e20 was stored as an integer beyond 64 bits; orjson refused it and
    the relay's TypeError took the worker (and then the stack) down."""
    assert detail_json({"decay_half_life_days": 10**20, "x": [1.5, None]}) == (
        '{"decay_half_life_days": 100000000000000000000, "x": [1.5, null]}'
    )


def test_a_tool_events_steps_always_fit_their_metadata_value() -> None:
    from agents_gateway.models import MAX_STEP_CHARS, MAX_STEPS
    from schemas.turns import MAX_METADATA_VALUE_CHARS

    worst = orjson.dumps(['"' * MAX_STEP_CHARS] * MAX_STEPS)  # every character escaped
    assert len(worst) <= MAX_METADATA_VALUE_CHARS
