"""memstream in Google ADK (``memstream_client.adk``) on the real stack, with ADK's real
``Runner``, ``LlmAgent`` and session service. The only fake is the model: a ``BaseLlm`` that
answers from a script and keeps every ``LlmRequest`` it receives.

The user's seed scenario end to end: preferences and a project's stack in session 1, a
14-day-old decision and permission rules seeded, then session 2 recalls them ambiently, finds
the decision with the archival-search tool, and the guardrail blocks, allows and holds tool
calls."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.events.event import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.function_tool import FunctionTool
from google.genai import types
from pydantic import PrivateAttr

from memstream_client import AsyncMemstream
from memstream_client.adk import (
    CONTEXT_START,
    MemstreamMemoryService,
    MemstreamPlugin,
    archival_search_tool,
    before_tool_callback,
    turn_id,
)
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.test_replay import replay

APP = "agents"
PROJECT = "CloudRetail"
AGENT = "adk_memory_agent"
USER = "user_adk_dev"

#: A step of the script: a tool call (name, args) or the final text of the turn.
Step = tuple[str, dict[str, Any]] | str


class ScriptedModel(BaseLlm):
    """A model that answers with the next step of its script, and remembers every request."""

    model: str = "scripted"
    _script: list[Step] = PrivateAttr(default_factory=list)
    _requests: list[LlmRequest] = PrivateAttr(default_factory=list)

    def then(self, *steps: Step) -> ScriptedModel:
        self._script.extend(steps)
        return self

    @property
    def requests(self) -> list[LlmRequest]:
        return self._requests

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self._requests.append(llm_request.model_copy(deep=True))
        step = self._script.pop(0) if self._script else "Done."
        if isinstance(step, str):
            part = types.Part(text=step)
        else:
            name, args = step
            part = types.Part(function_call=types.FunctionCall(name=name, args=args, id=f"call-{uuid.uuid4().hex[:8]}"))
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


class CountingTransport(httpx.AsyncBaseTransport):
    """The in-process gateway, counting requests per path."""

    def __init__(self, app: FastAPI) -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.paths: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return await self.inner.handle_async_request(request)


@dataclass
class Harness:
    client: AsyncMemstream
    transport: CountingTransport
    memory: MemstreamMemoryService
    model: ScriptedModel
    runner: Runner
    sessions: InMemorySessionService
    commands_run: list[str] = field(default_factory=list)

    async def turn(self, session_id: str, text: str) -> list[Event]:
        message = types.Content(role="user", parts=[types.Part(text=text)])
        return [e async for e in self.runner.run_async(user_id=USER, session_id=session_id, new_message=message)]

    async def session(self, session_id: str) -> None:
        await self.sessions.create_session(app_name=APP, user_id=USER, session_id=session_id)


@pytest_asyncio.fixture(loop_scope="session")
async def harness(gateway_app: FastAPI, api_key: str) -> AsyncIterator[Harness]:
    transport = CountingTransport(gateway_app)
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://gateway") as http,
        AsyncMemstream(api_key=api_key, http_client=http) as client,
    ):
        memory = MemstreamMemoryService(client, agent_id=AGENT, project_id=PROJECT)
        model = ScriptedModel()
        ran: list[str] = []

        def run_command(CommandLine: str) -> str:  # the seed's tool, with the seed's argument name
            """Executes a shell command on the host."""
            ran.append(CommandLine)
            return f"Executed: {CommandLine}"

        agent = LlmAgent(
            name=AGENT,
            model=model,
            instruction="You are an intelligent Google ADK enterprise developer assistant.",
            tools=[archival_search_tool(client), FunctionTool(run_command)],
        )
        sessions = InMemorySessionService()
        app = App(name=APP, root_agent=agent, plugins=[MemstreamPlugin(memory)])
        runner = Runner(app=app, session_service=sessions, memory_service=memory)
        yield Harness(client, transport, memory, model, runner, sessions, ran)


def system_instruction(request: LlmRequest) -> str:
    return str(request.config.system_instruction or "")


def function_responses(request: LlmRequest) -> dict[str, dict[str, Any]]:
    """The tool results the model received, by tool name (the latest of each)."""
    found: dict[str, dict[str, Any]] = {}
    for content in request.contents:
        for part in content.parts or ():
            if part.function_response is not None and part.function_response.name:
                found[part.function_response.name] = dict(part.function_response.response or {})
    return found


def confirmation_requested(events: list[Event]) -> bool:
    return any(
        part.function_call is not None and part.function_call.name == "adk_request_confirmation"
        for event in events
        for part in (event.content.parts if event.content and event.content.parts else ())
    )


async def seed(h: Harness) -> dict[str, str]:
    """The seed's archived decision (14 days old) and its permission rules."""
    await h.client.turns.publish(
        {
            "agent_id": AGENT, "user_id": USER, "session_id": "archive", "project_id": PROJECT, "role": "user",
            "content": "Archived Decision: CloudRetail services must use gRPC keepalive ping intervals of 15 seconds.",
            "event_time": (datetime.now(UTC) - timedelta(days=14)).isoformat(),
        }
    )  # fmt: skip
    allow = await h.client.rules.create(
        tool="run_command", effect="ALLOW", pattern=r"pytest.*--timeout=30", project_id=PROJECT
    )
    block = await h.client.rules.create(tool="run_command", effect="BLOCK", pattern=r"rm -rf.*", project_id=PROJECT)
    return {"allow": str(allow.rule_id), "block": str(block.rule_id)}


async def test_the_seed_scenario_end_to_end(
    harness: Harness, running_memory_worker: WorkerHandle, stack: RunningStack, tenant: str
) -> None:
    h = harness
    rules = await seed(h)

    # Session 1: the user's preferences and CloudRetail's stack reach memstream through the plugin.
    await h.session("sess_adk_001")
    h.model.then("Noted: Python 3.11, PostgreSQL and dark mode.", "Understood: FastAPI on AlloyDB, Valkey, 30 s.")
    await h.turn(
        "sess_adk_001", "I always write Python 3.11, my default database is PostgreSQL, and I prefer dark mode."
    )
    await h.turn(
        "sess_adk_001",
        "Project rule for CloudRetail: the backend is FastAPI running on AlloyDB, cached in Valkey, "
        "and every tool call gets a 30 second timeout.",
    )

    async def facts_known() -> bool:
        facts = (await h.client.entities.list(USER, project_id=PROJECT)).facts
        text = " ".join(f"{f.entity} {f.summary}" for f in facts).lower()
        return all(word in text for word in ("python", "postgresql", "dark", "fastapi", "alloydb"))

    await eventually(facts_known, timeout_s=90)

    def archive_stored() -> bool:  # stored by the ingest worker, whose consumer group may lag the memory worker's
        with stack.db(tenant) as conn:
            row = conn.execute("SELECT count(*) FROM episodes WHERE session_id = 'archive'").fetchone()
        return row == (1,)

    await eventually(archive_stored, timeout_s=60)

    # Session 2: cold start. Three model calls in one turn: archival search, a tool run, an answer.
    await h.session("sess_adk_002")
    h.model.then(
        ("search_archived_memory", {"query": "gRPC keepalive interval"}),
        ("run_command", {"CommandLine": "pytest --timeout=30"}),
        "Your preferences: Python 3.11, PostgreSQL, dark mode. CloudRetail: FastAPI on AlloyDB.",
    )
    before = len(h.model.requests)
    h.transport.paths.clear()
    await h.turn("sess_adk_002", "What are my coding preferences and the CloudRetail stack from my previous session?")
    calls = h.model.requests[before:]
    assert len(calls) == 3
    first = system_instruction(calls[0])
    assert CONTEXT_START in first
    for must in ("Python 3.11", "PostgreSQL", "FastAPI", "AlloyDB"):
        assert must.lower() in first.lower(), (must, first)
    assert "dark" in first.lower()
    assert all(CONTEXT_START in system_instruction(c) for c in calls)
    assert h.transport.paths.count("/v1/context") == 1  # once per invocation, not per model call
    archived = function_responses(calls[1])["search_archived_memory"]
    assert any("15 seconds" in m["content"] for m in archived["memories"]), archived
    assert h.commands_run == ["pytest --timeout=30"]

    # The guardrail: rm -rf never runs, and the model learns why.
    h.model.then(("run_command", {"CommandLine": "rm -rf /tmp/data"}), "I may not delete that.")
    before = len(h.model.requests)
    await h.turn("sess_adk_002", "Clean up /tmp/data.")
    denied = function_responses(h.model.requests[before + 1])["run_command"]
    assert denied["status"] == "DENIED" and denied["rule"] == rules["block"] and "blocked" in denied["error"]
    assert "rm -rf /tmp/data" not in h.commands_run

    # No rule: PENDING, a confirmation is requested, and the tool does not run.
    h.model.then(("run_command", {"CommandLine": "terraform destroy"}))
    events = await h.turn("sess_adk_002", "Tear down the staging stack.")
    assert confirmation_requested(events)
    assert "terraform destroy" not in h.commands_run
    pending = [
        p.function_response.response
        for e in events
        for p in (e.content.parts or ())
        if e.content and p.function_response
    ]
    assert pending and pending[0]["status"] == "PENDING"

    # An operator allows it once: it runs once, and the next attempt is PENDING again.
    await h.client.permissions.allow_once(
        session_id="sess_adk_002", tool="run_command", command="terraform destroy", project_id=PROJECT
    )
    h.model.then(("run_command", {"CommandLine": "terraform destroy"}), "Destroyed.")
    await h.turn("sess_adk_002", "Approved: tear it down.")
    assert h.commands_run.count("terraform destroy") == 1
    h.model.then(("run_command", {"CommandLine": "terraform destroy"}))
    again = await h.turn("sess_adk_002", "Once more.")
    assert confirmation_requested(again) and h.commands_run.count("terraform destroy") == 1


async def test_the_guardrail_fails_closed_when_memstream_is_unreachable() -> None:
    """Nothing listens on the port: the call is denied, saying why (or runs, if fail_open)."""
    dead = AsyncMemstream(base_url="http://127.0.0.1:9", api_key="msk_" + "0" * 16 + "_" + "x" * 30, max_retries=0)

    @dataclass
    class Tool:
        name: str = "run_command"

    @dataclass
    class Session:
        id: str = "s1"
        app_name: str = APP

    @dataclass
    class Context:
        session: Session = field(default_factory=Session)

    closed = before_tool_callback(dead, project_id=PROJECT)
    opened = before_tool_callback(dead, project_id=PROJECT, fail_open=True)
    async with dead:
        refused = await closed(tool=Tool(), args={"CommandLine": "ls"}, tool_context=Context())
        allowed = await opened(tool=Tool(), args={"CommandLine": "ls"}, tool_context=Context())
    assert refused is not None and refused["status"] == "DENIED"
    assert "permission service is unavailable" in refused["error"]
    assert allowed is None


async def test_saving_a_session_twice_stores_each_turn_once(
    harness: Harness, running_worker: WorkerHandle, stack: RunningStack, tenant: str
) -> None:
    h = harness
    await h.session("twice")
    h.model.then(("run_command", {"CommandLine": "pytest --timeout=30"}), "All green.")
    await h.client.rules.create(tool="run_command", effect="ALLOW", pattern=r"pytest.*", project_id=PROJECT)
    await h.turn("twice", "Run the tests, please.")
    session = await h.sessions.get_session(app_name=APP, user_id=USER, session_id="twice")
    assert session is not None
    await h.memory.add_session_to_memory(session)  # the plugin recorded it already: a third time
    await h.memory.add_session_to_memory(session)

    def stored() -> list[tuple[str, str, int]]:
        with stack.db(tenant) as conn:
            rows = conn.execute(
                "SELECT role, content, count(*) FROM episodes WHERE tenant_id = %s AND session_id = %s"
                " GROUP BY role, content ORDER BY min(created_at)",
                (tenant, "twice"),
            ).fetchall()
        return [(str(r), str(c), int(n)) for r, c, n in rows]

    await eventually(lambda: len(stored()) >= 4, timeout_s=60)
    rows = stored()
    assert [role for role, _, _ in rows] == ["user", "tool", "tool", "assistant"], rows
    assert all(n == 1 for _, _, n in rows), rows
    first = session.events[0]
    assert turn_id(APP, USER, "twice", first.id, 0) == turn_id(APP, USER, "twice", first.id, 0)


async def test_search_memory_answers_memory_entries(harness: Harness, running_worker: WorkerHandle) -> None:
    h = harness
    await h.client.turns.publish(
        {"agent_id": AGENT, "user_id": USER, "session_id": "s", "project_id": PROJECT, "role": "user",
         "content": "The staging database password rotates every 90 days."}
    )  # fmt: skip

    async def found() -> Any:
        response = await h.memory.search_memory(app_name=APP, user_id=USER, query="database password rotation")
        return [m for m in response.memories if "90 days" in (m.content.parts or [types.Part(text="")])[0].text]

    await eventually(found)
    [entry] = await found()
    assert entry.id and entry.author == "user" and entry.timestamp and datetime.fromisoformat(entry.timestamp)
    assert entry.custom_metadata["kind"] == "episode"


def test_the_memstream_uri_is_registered_for_adk_web(monkeypatch: pytest.MonkeyPatch) -> None:
    from google.adk.cli.service_registry import get_service_registry

    from memstream_client.adk import register

    monkeypatch.setenv("MEMSTREAM_API_KEY", "msk_" + "1" * 16 + "_" + "y" * 30)
    register()
    service = get_service_registry().create_memory_service("memstream://10.0.0.5:8080")
    assert isinstance(service, MemstreamMemoryService)
    assert service.client.options.base_url.rstrip("/") == "http://10.0.0.5:8080"


def test_the_example_says_what_it_needs_without_a_model() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_"))}
    done = subprocess.run(
        [sys.executable, "examples/adk_agent.py"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2, done.stderr
    assert "GOOGLE_API_KEY" in done.stderr and "MEMSTREAM_API_KEY" in done.stderr


async def test_delete_memory_forgets_one_memory_for_good(
    harness: Harness, running_worker: WorkerHandle, stack: RunningStack, tenant: str
) -> None:
    """``delete_memory`` with a ``search_memory`` entry's id: gone from search, and a replay of
    the event log does not bring it back."""
    h = harness
    await h.client.turns.publish(
        {"agent_id": AGENT, "user_id": USER, "session_id": "s", "project_id": PROJECT, "role": "user",
         "content": "My old locker combination was 4-8-15, please forget it."}
    )  # fmt: skip

    async def locker() -> list[Any]:
        found = await h.memory.search_memory(app_name=APP, user_id=USER, query="locker combination")
        return [m for m in found.memories if "4-8-15" in (m.content.parts or [types.Part(text="")])[0].text]

    await eventually(locker)
    [entry] = await locker()
    await h.memory.delete_memory(app_name=APP, user_id=USER, memory_id=entry.id)
    assert await locker() == []
    assert (await replay(stack, tenant)).status == "switched"
    assert await locker() == []
    with pytest.raises(ValueError, match="memory_id"):
        await h.memory.delete_memory(app_name=APP, user_id=USER)
