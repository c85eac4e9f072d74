"""How /ui is served (no browser needed): without a key, from the package's files, every answer
with a strict policy, and nothing of it in the OpenAPI document."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI

from agents_gateway.routes.ui import assets
from tests.fixtures.stack import client_for

pytestmark = pytest.mark.integration

STRICT = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "connect-src": "'self'",
    "frame-ancestors": "'none'",
    "base-uri": "'none'",
    "form-action": "'none'",
    "object-src": "'none'",
}


def directives(policy: str) -> dict[str, str]:
    return {
        name: value.strip()
        for name, _, value in (part.strip().partition(" ") for part in policy.split(";") if part.strip())
    }


def assert_secured(headers: object) -> None:
    policy = directives(headers["content-security-policy"])  # type: ignore[index]
    for name, value in STRICT.items():
        assert policy.get(name) == value, (name, policy)
    assert not any("unsafe" in value or "*" in value for value in policy.values()), policy
    assert headers["x-content-type-options"] == "nosniff"  # type: ignore[index]
    assert headers["referrer-policy"] == "no-referrer"  # type: ignore[index]


async def test_the_page_is_served_without_a_key_with_a_strict_policy(gateway_app: FastAPI) -> None:
    async with client_for(gateway_app, None) as client:
        page = await client.get("/ui")
        assert page.status_code == 200, page.text
        assert page.headers["content-type"].startswith("text/html")
        assert '<script type="module" src="/ui/app.js">' in page.text
        assert_secured(page.headers)
        script = await client.get("/ui/app.js")
        assert script.headers["content-type"].startswith("text/javascript")
        assert_secured(script.headers)
        style = await client.get("/ui/style.css")
        assert style.headers["content-type"].startswith("text/css")
        again = await client.get("/ui/app.js", headers={"if-none-match": script.headers["etag"]})
        assert again.status_code == 304 and again.content == b""


async def test_errors_under_ui_carry_the_policy_too(gateway_app: FastAPI) -> None:
    async with client_for(gateway_app, None) as client:
        for path in ("/ui/../../etc/passwd", "/ui/views/../../routes/ui.py"):  # the client resolves the dots
            assert (await client.get(path)).status_code == 404
        for path in (
            "/ui/nothing.js",
            "/ui/%2e%2e/app.py",
            "/ui/%2e%2e%2froutes%2fui.py",
            "/ui/__init__.py",
            "/ui/views",
            "/ui/",  # paths are exact: a trailing slash is a 404 (docs/api.md)
            "/ui/app.js/",
        ):
            answer = await client.get(path)
            assert answer.status_code == 404, path
            assert answer.json()["error"]["code"] == "not_found"
            assert_secured(answer.headers)
        refused = await client.post("/ui", json={})
        assert refused.status_code == 405 and refused.headers["allow"] == "GET"
        assert_secured(refused.headers)


async def test_ui_is_not_in_the_api_document(gateway_app: FastAPI) -> None:
    async with client_for(gateway_app, None) as client:
        document = (await client.get("/openapi.json")).json()
    assert not [path for path in document["paths"] if path.startswith("/ui")]


def test_the_package_ships_every_file_the_page_loads() -> None:
    shipped = assets()
    assert {"index.html", "app.js", "api.js", "dom.js", "style.css", "layout.js", "views/graph.js"} <= shipped.keys()
    for name, asset in shipped.items():
        if name.endswith(".js"):
            text = asset.body.decode()
            # Data is rendered as text: no markup sinks, no eval, no inline handlers.
            for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
                assert sink not in text, (name, sink)
    index = shipped["index.html"].body.decode()
    assert "<script>" not in index and "<style" not in index and not re.search(r"\s(on[a-z]+|style)\s*=", index)
