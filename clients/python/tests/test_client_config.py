"""Configuration: arguments, then the environment, then defaults; a missing key is a clear
error before anything is sent; injected HTTP clients are used as they are and left open."""

from __future__ import annotations

import tomllib
from pathlib import Path

import httpx
import pytest

import memstream_client
from client_script import KEY, Script, ok
from memstream_client import AsyncMemstream, Memstream, MissingAPIKeyError

RULES = {"rules": []}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("MEMSTREAM_BASE_URL", raising=False)
    monkeypatch.delenv("MEMSTREAM_API_KEY", raising=False)
    return monkeypatch


def scripted(*answers: httpx.Response) -> tuple[httpx.Client, Script]:
    script = Script(*answers)
    return httpx.Client(transport=httpx.MockTransport(script)), script


def test_the_environment_names_the_gateway_and_the_key(clean_env) -> None:
    clean_env.setenv("MEMSTREAM_BASE_URL", "https://memory.example.com/base/")
    clean_env.setenv("MEMSTREAM_API_KEY", KEY)
    http, script = scripted(ok(RULES))
    Memstream(http_client=http).rules.list()
    sent = script.requests[0]
    assert str(sent.url) == "https://memory.example.com/base/v1/permissions/rules"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["user-agent"].startswith("memstream-client/")


def test_arguments_beat_the_environment_and_the_default_is_memstream_ups_port(clean_env) -> None:
    assert Memstream(api_key=KEY).options.base_url == "http://127.0.0.1:8080"
    clean_env.setenv("MEMSTREAM_BASE_URL", "http://from-env:1")
    clean_env.setenv("MEMSTREAM_API_KEY", "msk_env")
    client = Memstream("http://from-argument:2", "msk_argument")
    assert (client.options.base_url, client.options.api_key) == ("http://from-argument:2", "msk_argument")
    injected = httpx.Client(base_url="http://from-client:3")
    assert Memstream(http_client=injected).options.base_url == "http://from-client:3"


def test_a_missing_key_is_refused_before_anything_is_sent(clean_env) -> None:
    http, script = scripted(ok(RULES))
    client = Memstream("http://gateway", http_client=http)
    with pytest.raises(MissingAPIKeyError, match="MEMSTREAM_API_KEY"):
        client.rules.list()
    assert script.requests == []
    with_header = Memstream("http://gateway", http_client=http, headers={"X-API-Key": KEY})
    with_header.rules.list()  # a key in the headers is a key
    assert script.requests[0].headers["x-api-key"] == KEY and "authorization" not in script.requests[0].headers


def test_options_are_checked_when_the_client_is_made(clean_env) -> None:
    for bad in ({"timeout_s": 0}, {"timeout_s": -1.0}, {"max_retries": -1}, {"max_retries": 1.5}):
        with pytest.raises(ValueError):
            Memstream(api_key=KEY, **bad)
    with pytest.raises(ValueError, match="http"):
        Memstream("gateway:8080", KEY)
    with pytest.raises(TypeError, match="AsyncClient"):
        AsyncMemstream(api_key=KEY, http_client=httpx.Client())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty"):
        Memstream(api_key=KEY).with_options(api_key=" ")
    assert KEY not in repr(Memstream(api_key=KEY).options)


def test_a_client_closes_only_the_http_client_it_made(clean_env) -> None:
    injected = httpx.Client()
    with Memstream(api_key=KEY, http_client=injected) as client:
        clone = client.with_options(timeout_s=1.0)
    clone.close()
    assert not injected.is_closed
    with Memstream(api_key=KEY) as own:
        made = own._http
        own.with_options(max_retries=0).close()
        assert not made.is_closed
    assert made.is_closed


async def test_an_async_client_closes_only_the_http_client_it_made(clean_env) -> None:
    injected = httpx.AsyncClient()
    async with AsyncMemstream(api_key=KEY, http_client=injected):
        pass
    assert not injected.is_closed
    async with AsyncMemstream(api_key=KEY) as own:
        made = own._http
    assert made.is_closed
    await injected.aclose()


def test_the_version_is_the_distributions() -> None:
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    assert memstream_client.__version__ == project["version"]
    assert project["dependencies"] == ["httpx>=0.27", "pydantic>=2.7"]
