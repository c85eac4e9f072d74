"""NUL and control characters in anything the permission endpoints take are a 422 with
the usual error body, never a text/plain 500 from the database; a command may hold tabs
and line breaks."""

from __future__ import annotations

import json

import httpx
import pytest

EVALUATE = {"session_id": "s1", "tool": "shell", "command": "ls -la"}
RULE = {"tool": "shell", "effect": "BLOCK", "pattern": "^rm", "description": "no rm"}


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/permissions/evaluate", {**EVALUATE, "tool": "sh\x00ell"}),
        ("/v1/permissions/evaluate", {**EVALUATE, "tool": "shell\t"}),
        ("/v1/permissions/evaluate", {**EVALUATE, "command": "ls\x00 -la"}),
        ("/v1/permissions/evaluate", {**EVALUATE, "command": "echo \x1b[31mred"}),
        ("/v1/permissions/evaluate", {**EVALUATE, "command": "echo \x7f"}),
        ("/v1/permissions/evaluate", {**EVALUATE, "command": "echo \ud800"}),
        ("/v1/permissions/evaluate", {**EVALUATE, "session_id": "s\x00"}),
        ("/v1/permissions/evaluate", {**EVALUATE, "project_id": "p\x01"}),
        ("/v1/permissions/allow-once", {**EVALUATE, "command": "make\x00deploy"}),
        ("/v1/permissions/allow-once", {**EVALUATE, "tool": "\x00"}),
        ("/v1/permissions/rules", {**RULE, "pattern": "^rm\x00"}),
        ("/v1/permissions/rules", {**RULE, "pattern": "^rm\t-rf"}),
        ("/v1/permissions/rules", {**RULE, "description": "no\x00rm"}),
        ("/v1/permissions/rules", {**RULE, "description": "no rm\nat all"}),
        ("/v1/permissions/rules", {**RULE, "tool": "sh\x1fell"}),
    ],
)
async def test_control_characters_in_bodies_are_refused(
    gateway: httpx.AsyncClient, path: str, body: dict[str, str]
) -> None:
    # ASCII-escaped JSON, so that a lone surrogate travels as the client would send it.
    response = await gateway.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == "invalid_request"
    assert (await gateway.get("/v1/permissions/rules")).json()["rules"] == []


@pytest.mark.parametrize("tool", ["a\x00b", "sh\x1bell", "shell\n"])
async def test_control_characters_in_the_tool_query_are_refused(gateway: httpx.AsyncClient, tool: str) -> None:
    response = await gateway.get("/v1/permissions/rules", params={"tool": tool})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/json")


async def test_a_command_may_hold_tabs_and_line_breaks(gateway: httpx.AsyncClient) -> None:
    rule = await gateway.post("/v1/permissions/rules", json={**RULE, "pattern": r"(?m)^rm\s"})
    assert rule.status_code == 201, rule.text
    verdict = await gateway.post("/v1/permissions/evaluate", json={**EVALUATE, "command": "cd /tmp\r\nrm\t-rf x"})
    assert verdict.status_code == 200, verdict.text
    assert verdict.json()["decision"] == "BLOCK"
