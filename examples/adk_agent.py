"""The user's seed scenario as a Google ADK agent with memstream memory, against a running stack.

    make run                                   # in another terminal: the whole stack
    export MEMSTREAM_API_KEY=$(.venv/bin/memstream keys create --tenant demo --scopes ingest,read,admin)
    export GOOGLE_API_KEY=...                  # or GOOGLE_GENAI_USE_VERTEXAI=true + GOOGLE_CLOUD_PROJECT/LOCATION
    .venv/bin/python examples/adk_agent.py

Session 1 states preferences and CloudRetail's stack; memstream's memory worker turns them into
facts. Session 2, a new session, is asked about them: the plugin puts them in the system
instruction before the first model call, the agent finds a 14-day-old decision with
``search_archived_memory``, and the guardrail lets ``pytest --timeout=30`` run and blocks
``rm -rf``. Needs a real Gemini model: without a key it says what it needs and exits.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from datetime import UTC, datetime, timedelta

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from memstream_client import AsyncMemstream
from memstream_client.adk import MemstreamMemoryService, MemstreamPlugin, archival_search_tool

APP = "agents"
PROJECT = "CloudRetail"
AGENT = "adk_memory_agent"
DECISION = "Archived Decision: CloudRetail services must use gRPC keepalive ping intervals of 15 seconds."
MODEL = os.environ.get("GEMINI_MODEL", "gemini-2.5-flash")


def run_command(CommandLine: str) -> str:  # the seed's tool, with the seed's argument name
    """Executes a shell command on the host (here: only says it would)."""
    return f"Executed: {CommandLine}"


def _model_configured() -> bool:
    vertex = os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("1", "true")
    return bool(os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")) or (
        vertex and bool(os.environ.get("GOOGLE_CLOUD_PROJECT"))
    )


async def _turn(runner: Runner, user: str, session: str, text: str) -> str:
    print(f"\n> {text}")
    message = types.Content(role="user", parts=[types.Part(text=text)])
    answer = []
    async for event in runner.run_async(user_id=user, session_id=session, new_message=message):
        for part in event.content.parts if event.content and event.content.parts else ():
            if part.text and event.author != "user":
                answer.append(part.text)
            if part.function_call:
                print(f"  [tool call] {part.function_call.name}({part.function_call.args})")
            if part.function_response:
                print(f"  [tool result] {part.function_response.name}: {part.function_response.response}")
    reply = "".join(answer).strip()
    print(reply)
    return reply


async def main() -> int:
    if not _model_configured():
        print(
            "This example talks to a real Gemini model. Set GOOGLE_API_KEY (Gemini API), or\n"
            "GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (Vertex AI),\n"
            "and MEMSTREAM_API_KEY for a running `make run` (see the top of this file).",
            file=sys.stderr,
        )
        return 2
    user = f"user-{uuid.uuid4().hex[:6]}"  # a fresh user each run: nothing left from earlier runs
    async with AsyncMemstream() as client:  # MEMSTREAM_BASE_URL (default: make run's), MEMSTREAM_API_KEY
        await client.turns.publish(
            {
                "agent_id": AGENT, "user_id": user, "session_id": "archive", "project_id": PROJECT, "role": "user",
                "content": DECISION,
                "event_time": (datetime.now(UTC) - timedelta(days=14)).isoformat(),
            }
        )  # fmt: skip
        await client.rules.create(
            tool="run_command", effect="ALLOW", pattern=r"pytest.*--timeout=30", project_id=PROJECT
        )
        await client.rules.create(tool="run_command", effect="BLOCK", pattern=r"rm -rf.*", project_id=PROJECT)

        memory = MemstreamMemoryService(client, agent_id=AGENT, project_id=PROJECT)
        agent = LlmAgent(
            name=AGENT,
            model=MODEL,
            instruction="You are an intelligent Google ADK enterprise developer assistant.",
            tools=[archival_search_tool(client), FunctionTool(run_command)],
        )
        sessions = InMemorySessionService()
        runner = Runner(
            app=App(name=APP, root_agent=agent, plugins=[MemstreamPlugin(memory)]),
            session_service=sessions,
            memory_service=memory,
        )

        print("--- Session 1: preferences and CloudRetail's stack ---")
        await sessions.create_session(app_name=APP, user_id=user, session_id="s1")
        await _turn(
            runner, user, "s1", "I always write Python 3.11, my database is PostgreSQL, and I prefer dark mode."
        )
        stack = "the backend is FastAPI on AlloyDB, cached in Valkey, with 30 second tool timeouts"
        await _turn(runner, user, "s1", f"Project rule for CloudRetail: {stack}.")

        print("\n(waiting for memstream's memory worker to extract facts)")
        for _ in range(60):
            facts = (await client.entities.list(user, project_id=PROJECT)).facts
            if len(facts) >= 3:
                break
            await asyncio.sleep(1)

        print("\n--- Session 2: a new session ---")
        await sessions.create_session(app_name=APP, user_id=user, session_id="s2")
        question = "What are my coding preferences and the CloudRetail stack from my previous session?"
        await _turn(runner, user, "s2", question)
        await _turn(runner, user, "s2", "What was the agreed gRPC keepalive interval from two weeks ago?")
        await _turn(runner, user, "s2", "Run `pytest --timeout=30`, then `rm -rf /tmp/data`, with run_command.")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
