"""The ADK guardrail's decisions (``memstream_client.adk.guardrail``) for each answer of the
permission engine, on a mocked gateway."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from client_script import BASE_URL, KEY
from memstream_client import AsyncMemstream
from memstream_client.adk.guardrail import Guardrail, command_of


@dataclass
class Session:
    id: str = "s1"
    app_name: str = "agents"


@dataclass
class ToolContext:
    session: Session = field(default_factory=Session)
    confirmations: list[dict[str, Any]] = field(default_factory=list)

    def request_confirmation(self, *, hint: str | None = None, payload: Any = None) -> None:
        self.confirmations.append({"hint": hint, "payload": payload})


def gateway(answer: httpx.Response, asked: list[dict[str, Any]]) -> AsyncMemstream:
    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(json.loads(request.content))
        return answer

    http = httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url=BASE_URL)
    return AsyncMemstream(BASE_URL, KEY, http_client=http, max_retries=0)


RULE = "6f1b5c1e-51a4-4f43-9a39-7b2f3a4e2c11"


def verdict(decision: str, tier: str = "project", rule: str | None = RULE) -> httpx.Response:
    return httpx.Response(
        200, json={"decision": decision, "tier": tier, "reason": "a rule", "rule_id": rule, "grant_id": None}
    )


@pytest.mark.parametrize(
    ("args", "command"),
    [
        ({"CommandLine": "pytest --timeout=30"}, "pytest --timeout=30"),
        ({"command": "ls", "cwd": "/; rm -rf /"}, '{"command": "ls", "cwd": "/; rm -rf /"}'),
        ({"command": "ls", "count": 3}, '{"command": "ls", "count": 3}'),
        ({}, "run_command"),
    ],
)
def test_a_rule_sees_every_argument_the_tool_acts_on(args: dict[str, Any], command: str) -> None:
    assert command_of("run_command", args) == command


async def test_allow_runs_block_denies_pending_asks() -> None:
    asked: list[dict[str, Any]] = []
    context = ToolContext()
    allowed = await Guardrail(gateway(verdict("ALLOW"), asked), agent_id="a1").check(
        "run_command", {"c": "ls"}, context
    )
    blocked = await Guardrail(gateway(verdict("BLOCK"), asked)).check("run_command", {"c": "rm -rf /"}, context)
    pending = await Guardrail(gateway(verdict("PENDING", "none", None), asked)).check("deploy", {"c": "x"}, context)
    assert allowed is None
    assert blocked == {"status": "DENIED", "tool": "run_command", "rule": RULE, "error": "blocked: a rule"}
    assert pending is not None and pending["status"] == "PENDING" and pending["rule"] == "none"
    [asked_person] = context.confirmations
    assert asked_person["payload"] == {"tool": "deploy", "command": "x"} and "deploy" in asked_person["hint"]
    assert asked[0] == {
        "session_id": "s1",
        "tool": "run_command",
        "command": "ls",
        "project_id": "agents",
        "agent_id": "a1",
    }


async def test_memory_reads_are_preapproved_without_asking() -> None:
    asked: list[dict[str, Any]] = []
    guard = Guardrail(gateway(verdict("BLOCK"), asked))
    assert await guard.check("search_archived_memory", {"query": "x"}, ToolContext()) is None
    assert asked == []


@pytest.mark.parametrize(
    "answer", [httpx.Response(503, json={"error": {"code": "x", "message": "down", "details": []}})]
)
async def test_an_unavailable_engine_denies_unless_told_to_fail_open(answer: httpx.Response) -> None:
    closed = await Guardrail(gateway(answer, [])).check("run_command", {"c": "ls"}, ToolContext())
    opened = await Guardrail(gateway(answer, []), fail_open=True).check("run_command", {"c": "ls"}, ToolContext())
    assert closed is not None and closed["status"] == "DENIED" and "unavailable" in closed["error"]
    assert opened is None
