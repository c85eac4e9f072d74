"""Property: whatever a client sends, the gateway answers 2xx or a 4xx with a message,
never a 5xx (its dependencies are up during this test)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ENDPOINTS = [
    ("POST", "/v1/turns"),
    ("GET", "/v1/sessions/{id}/buffer"),
    ("GET", "/v1/search"),
    ("POST", "/v1/permissions/evaluate"),
    ("POST", "/v1/permissions/allow-once"),
    ("POST", "/v1/permissions/rules"),
    ("GET", "/v1/permissions/rules"),
    ("DELETE", "/v1/permissions/rules/{id}"),
    ("GET", "/v1/tenant/privacy"),
    ("PUT", "/v1/tenant/privacy"),
    ("POST", "/v1/users/{id}/erase"),
]
FIELDS = [
    "tenant_id", "agent_id", "user_id", "session_id", "project_id", "role", "content", "event_id",
    "event_time", "tool_name", "tool_status", "tags", "metadata", "shared", "turns", "tool", "command",
    "effect", "pattern", "position", "description", "redact_email", "redact_phone", "q", "k",
]  # fmt: skip

texts = st.text(max_size=60) | st.sampled_from(
    [
        "user",
        "assistant",
        "ALLOW",
        "BLOCK",
        "shell",
        "2026-11-30T09:00:00Z",
        "^ls",
        "(",
        "t{1}",
        "\x00",
        "é" * 40,
    ]
)
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | texts
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | texts, inner, max_size=6),
    max_leaves=20,
)
bodies = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=10) | json_values
raw_bodies = st.binary(max_size=200) | bodies.map(lambda b: json.dumps(b).encode())


def _path(template: str, fill: str) -> str:
    return template.replace("{id}", quote(fill, safe=""))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    endpoint=st.sampled_from(ENDPOINTS),
    path_id=st.text(min_size=1, max_size=40).filter(lambda s: s not in {".", ".."}),
    params=st.dictionaries(st.sampled_from(FIELDS), texts, max_size=5),
    body=st.one_of(bodies.map(lambda b: ("json", b)), raw_bodies.map(lambda b: ("raw", b))),
    content_type=st.sampled_from(["application/json", "text/plain", "application/json; charset=utf-8"]),
)
async def test_no_input_makes_the_gateway_fail(
    gateway: httpx.AsyncClient,
    endpoint: tuple[str, str],
    path_id: str,
    params: dict[str, str],
    body: tuple[str, Any],
    content_type: str,
) -> None:
    method, template = endpoint
    kind, payload = body
    content = payload if kind == "raw" else json.dumps(payload).encode()  # NaN and huge ints included
    response = await gateway.request(
        method,
        _path(template, path_id),
        params=params,
        content=content,
        headers={"content-type": content_type},
    )
    assert response.status_code < 500, (method, template, params, payload, response.text)
    if response.status_code >= 400:
        error = response.json()["error"]
        assert error["message"] and error["code"]
