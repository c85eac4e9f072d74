"""MEMSTREAM_OPS_TOKEN: the operational endpoints (/metrics, the API document and its pages)
answer only the token when it is set, in the gateway's error shape otherwise; unset, they are
open as before. (No stores here: /metrics itself is served in tests/integration/test_ops_token.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from pydantic import SecretStr, ValidationError

from agents_gateway.app import create_app
from agents_gateway.ops_token import OPS_PATHS
from memstream.settings import MIN_OPS_TOKEN_CHARS, Settings

TOKEN = "ops-" + "x" * 40
#: The pages that answer without any store (each needs MEMSTREAM_GATEWAY_DOCS=true but the document).
DOCUMENT_PATHS = ("/openapi.json", "/docs", "/redoc")


def client(settings: Settings) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=create_app(settings), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://gateway")


@pytest.fixture
async def guarded() -> AsyncIterator[httpx.AsyncClient]:
    async with client(Settings(ops_token=SecretStr(TOKEN), gateway_docs=True)) as c:
        yield c


@pytest.mark.parametrize("path", sorted(OPS_PATHS))
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": "Bearer wrong-token"},
        {"authorization": f"Bearer {TOKEN[:-1]}"},  # one character short
        {"authorization": f"Bearer {TOKEN}x"},
        {"authorization": f"Basic {TOKEN}"},
        {"authorization": TOKEN},
        {"x-api-key": TOKEN},
    ],
    ids=["none", "wrong", "prefix", "longer", "basic", "no-scheme", "x-api-key"],
)
async def test_without_the_token_an_operational_path_is_a_401(
    guarded: httpx.AsyncClient, path: str, headers: dict[str, str]
) -> None:
    response = await guarded.get(path, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    error = response.json()["error"]
    assert error["code"] == "ops_token_required" and "MEMSTREAM_OPS_TOKEN" in error["message"]
    assert TOKEN not in response.text
    assert response.headers["x-request-id"], "named like every other answer"


@pytest.mark.parametrize("path", DOCUMENT_PATHS)
async def test_with_the_token_the_document_and_its_pages_answer(guarded: httpx.AsyncClient, path: str) -> None:
    for scheme in ("Bearer", "bearer"):
        response = await guarded.get(path, headers={"authorization": f"{scheme} {TOKEN}"})
        assert response.status_code == 200, response.text


async def test_the_probes_stay_open_with_the_token_set(guarded: httpx.AsyncClient) -> None:
    assert (await guarded.get("/healthz")).status_code == 200


async def test_unset_the_operational_paths_are_open_as_before() -> None:
    async with client(Settings(gateway_docs=True)) as open_gateway:
        for path in DOCUMENT_PATHS:
            assert (await open_gateway.get(path)).status_code == 200, path
    async with client(Settings()) as default:
        assert (await default.get("/openapi.json")).status_code == 200
        assert (await default.get("/docs")).status_code == 404, "the docs pages stay off unless asked for"


def test_an_empty_token_is_none_and_a_short_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTREAM_OPS_TOKEN", "")
    assert Settings().ops_token is None
    with pytest.raises(ValidationError, match=f"at least {MIN_OPS_TOKEN_CHARS} characters"):
        Settings(ops_token=SecretStr("x" * (MIN_OPS_TOKEN_CHARS - 1)))
    monkeypatch.setenv("MEMSTREAM_OPS_TOKEN", TOKEN)
    token = Settings().ops_token
    assert token is not None and token.get_secret_value() == TOKEN
    assert TOKEN not in repr(Settings())
