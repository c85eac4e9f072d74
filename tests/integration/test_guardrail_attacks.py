"""The ADK guardrail against what an outside attacker tried (issue 45), on the real gateway
with ADK's real ``Runner``: a real tool function that must not run.

1. It judged the first 8,192 characters and ran the whole command: ``"ls" + 8,200 blanks +
   "; rm -rf /tmp/victim"`` was ALLOWed by ``^ls( |$)`` although ``\\brm -rf\\b`` blocks.
2. With ``fail_open=True``, a command the gateway refuses as input (a control character: 422)
   counted as "service unavailable", and the blocked command ran.

And the class: for any command, the guardrail lets the tool run exactly when the gateway
answers ALLOW for that very string.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.function_tool import FunctionTool
from google.genai import types
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memstream_client import AsyncMemstream
from memstream_client.adk import Guardrail, MemstreamMemoryService, MemstreamPlugin, before_tool_callback
from memstream_client.errors import MemstreamError
from tests.integration.test_adk import ScriptedModel, function_responses

APP = "guarded"
PROJECT = "guarded-project"
USER = "u1"
LONG = "ls" + " " * 8200 + "; rm -rf /tmp/victim"


@dataclass
class Rig:
    client: AsyncMemstream
    ran: list[str] = field(default_factory=list)

    def tools(self) -> list[FunctionTool]:
        """A shell tool, a shell tool run in a folder, and a deploy with a default."""
        ran = self.ran

        def run_command(CommandLine: str) -> str:
            """Executes a shell command on the host."""
            ran.append(CommandLine)
            return "done"

        def run_in_dir(command: str, cwd: str) -> str:
            """Executes a shell command in a folder."""
            ran.append(f"{cwd}$ {command}")
            return "done"

        def deploy(env: str = "production") -> str:
            """Deploys to an environment."""
            ran.append(f"deploy {env}")
            return "done"

        return [FunctionTool(run_command), FunctionTool(run_in_dir), FunctionTool(deploy)]

    def runner(self, model: ScriptedModel, *, plugin: bool, fail_open: bool) -> Runner:
        """An agent with the rig's tools, guarded by the plugin or by an agent callback."""
        callback = None if plugin else before_tool_callback(self.client, project_id=PROJECT, fail_open=fail_open)
        agent = LlmAgent(name="shell_agent", model=model, tools=self.tools(), before_tool_callback=callback)
        memory = MemstreamMemoryService(self.client, agent_id="shell_agent", project_id=PROJECT)
        plugins = [MemstreamPlugin(memory, record=False, fail_open=fail_open)] if plugin else []
        return Runner(app=App(name=APP, root_agent=agent, plugins=plugins), session_service=InMemorySessionService())

    async def call(
        self, line: str, /, *, plugin: bool, fail_open: bool = False, tool: str = "run_command", **args: Any
    ) -> dict[str, Any]:
        """The model asks for ``tool(CommandLine=line)`` (or ``tool(**args)``); what it got back."""
        model = ScriptedModel().then((tool, args or {"CommandLine": line}), "ok")
        runner = self.runner(model, plugin=plugin, fail_open=fail_open)
        session = await runner.session_service.create_session(app_name=APP, user_id=USER)
        message = types.Content(role="user", parts=[types.Part(text="go")])
        async for _ in runner.run_async(user_id=USER, session_id=session.id, new_message=message):
            pass
        return function_responses(model.requests[1])[tool]


@pytest_asyncio.fixture(loop_scope="session")
async def rig(gateway_app: FastAPI, api_key: str) -> AsyncIterator[Rig]:
    transport = httpx.ASGITransport(app=gateway_app)
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://gateway") as http,
        AsyncMemstream(api_key=api_key, http_client=http, max_retries=0) as client,
    ):
        await client.rules.create(tool="run_command", effect="ALLOW", pattern=r"^ls( |$)", project_id=PROJECT)
        await client.rules.create(tool="run_command", effect="BLOCK", pattern=r"\brm -rf\b", project_id=PROJECT)
        judged_json = r'^run_in_dir \{"command": "ls( [^"]*)?", "cwd": "/work"\}$'
        await client.rules.create(tool="run_in_dir", effect="ALLOW", pattern=judged_json, project_id=PROJECT)
        await client.rules.create(tool="deploy", effect="ALLOW", pattern=r"^staging$", project_id=PROJECT)
        yield Rig(client)


@pytest.mark.parametrize("plugin", [True, False], ids=["plugin", "callback"])
async def test_a_command_longer_than_the_gateway_judges_does_not_run(rig: Rig, plugin: bool) -> None:
    assert await rig.call("ls -la", plugin=plugin) == {"result": "done"}  # the rig runs what is allowed
    answer = await rig.call(LONG, plugin=plugin)
    assert LONG not in rig.ran and rig.ran == ["ls -la"]
    assert answer["status"] == "DENIED" and "more than the 8192" in answer["error"], answer


@pytest.mark.parametrize("plugin", [True, False], ids=["plugin", "callback"])
@pytest.mark.parametrize("command", ["rm -rf /tmp/victim # \x1b", "rm -rf /\x00", LONG, "ls" + " " * 5_000_000 + "; x"])
async def test_failing_open_never_covers_a_refused_input(rig: Rig, plugin: bool, command: str) -> None:
    answer = await rig.call(command, plugin=plugin, fail_open=True)
    assert rig.ran == [], answer
    assert answer["status"] == "DENIED", answer


# --- a second red team (issue 45): what a multi-argument or function tool really gets --------------


@pytest.mark.parametrize("plugin", [True, False], ids=["plugin", "callback"])
async def test_a_line_break_inside_an_argument_is_judged_as_one(rig: Rig, plugin: bool) -> None:
    """Judged as escaped JSON, ``ls -la\\ntouch PWNED`` was one command to the rule (ALLOW) and
    two to bash."""
    assert await rig.call("", plugin=plugin, tool="run_in_dir", command="ls -la", cwd="/work") == {"result": "done"}
    for command in ("ls -la\ntouch PWNED", "ls -la\x1b"):
        answer = await rig.call("", plugin=plugin, tool="run_in_dir", command=command, cwd="/work")
        assert answer["status"] in ("DENIED", "PENDING"), answer
    assert rig.ran == ["/work$ ls -la"]


@pytest.mark.parametrize("plugin", [True, False], ids=["plugin", "callback"])
async def test_a_function_tool_is_judged_by_what_its_function_gets(rig: Rig, plugin: bool) -> None:
    """``deploy(environment="staging")``: ADK drops the argument and runs the default
    ``production``, which the rule for ``staging`` never allowed."""
    assert await rig.call("", plugin=plugin, tool="deploy", env="staging") == {"result": "done"}
    dropped = await rig.call("", plugin=plugin, tool="deploy", environment="staging")
    defaulted = await rig.call("", plugin=plugin, tool="deploy", unused="staging")
    assert dropped["status"] == "DENIED" and defaulted["status"] == "DENIED", (dropped, defaulted)
    assert rig.ran == ["deploy staging"]


# --- the class: the guardrail decides what the gateway decides --------------------------------

PROGRAMS = [
    "ls", "ls -la", "git status", "rm -rf /tmp/victim", "cat README.md", "\uff4c\uff53 -la",
    "\U0001d425\U0001d42c -la", "git\u00a0status", "l\u200bs", "r\u043c -rf /", "\uff52\uff4d -rf /",
]  # fmt: skip
SEPARATORS = [" ", "\t", "\u00a0", "; ", " && ", "\n", "\x1b", "\x00", "\u2028", "\uff1b", " $(", "`"]


@dataclass(frozen=True)
class Tool:
    name: str = "run_command"


@dataclass(frozen=True)
class Session:
    app_name: str = APP
    id: str = field(default_factory=lambda: f"s-{uuid.uuid4().hex[:8]}")


@dataclass
class Context:
    session: Session = field(default_factory=Session)

    def request_confirmation(self, *, hint: str | None = None, payload: Any = None) -> None:
        """A person would be asked; nothing runs meanwhile."""


commands = st.builds(
    lambda first, separator, times, second: first + separator * times + second,
    st.sampled_from(PROGRAMS),
    st.sampled_from(SEPARATORS),
    st.sampled_from([1, 2, 8190, 8200]),
    st.sampled_from(PROGRAMS) | st.just(""),
)


async def gateway_says(client: AsyncMemstream, command: str, session_id: str) -> str:
    """The gateway's decision on ``command`` for the rig's tool and project, or what refused it."""
    try:
        verdict = await client.permissions.evaluate(
            session_id=session_id, tool="run_command", command=command, project_id=PROJECT
        )
    except MemstreamError as exc:
        return type(exc).__name__
    return verdict.decision


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=commands, fail_open=st.booleans())
@example(command=LONG, fail_open=True)
@example(command="\uff4c\uff53 -la", fail_open=False)
async def test_the_tool_runs_exactly_when_the_gateway_allows_that_string(
    rig: Rig, command: str, fail_open: bool
) -> None:
    context = Context()
    guard = Guardrail(rig.client, project_id=PROJECT, fail_open=fail_open)
    outcome = await guard.check(Tool(), {"CommandLine": command}, context)
    server = await gateway_says(rig.client, command, context.session.id)
    assert (outcome is None) == (server == "ALLOW"), (command, server, outcome)
