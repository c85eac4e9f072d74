"""The MCP server (``memstream_client.mcp``) on the real stack: in-process with the SDK's
in-memory client (both the modern dispatch and the legacy initialize handshake), over streamable
HTTP at the gateway's ``/mcp``, and over stdio as ``memstream mcp``."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio._core._subprocesses  # noqa: F401 - see below
import httpx
import httpx2
import pytest
import pytest_asyncio
from fastapi import FastAPI
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from memstream_client import AsyncMemstream
from memstream_client.mcp import Defaults, build_server
from tests.fixtures.stack import RunningStack, Served, WorkerHandle, client_for, eventually, serve_gateway
from tests.markdown import ROOT, fenced_blocks

# anyio imports its subprocess module lazily, and pytest rewrites anyio's modules (it is a pytest
# plugin): compiled deep inside the MCP stdio client's stack, CPython 3.11 fails with "AST
# constructor recursion depth mismatch". Imported here, it is compiled at the top level.

READ_TOOLS = {
    "recall",
    "search_memory",
    "list_facts",
    "fact_history",
    "related_entities",
    "best_skills",
}
# check_permission uses up the allow-once grant that allows a command: not read-only.
WRITE_TOOLS = {"remember", "record_tool_outcome", "forget", "check_permission"}
#: Tools that delete memory (MCP's destructiveHint): forgetting, and nothing else.
DESTRUCTIVE_TOOLS = {"forget"}


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


@pytest_asyncio.fixture(loop_scope="session")
async def memstream(gateway_app: FastAPI, api_key: str) -> AsyncIterator[AsyncMemstream]:
    async with client_for(gateway_app, api_key) as http, AsyncMemstream(api_key=api_key, http_client=http) as client:
        yield client


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def remember_and_recall(mcp: Client, user: str, secret: str) -> None:
    """``remember`` a turn, then ``recall`` until the context holds it (the worker ingests it)."""
    event_id = str(uuid.uuid4())
    stored = data(
        await mcp.call_tool(
            "remember",
            {
                "user_id": user,
                "turns": [{"role": "user", "content": f"My locker code is {secret}.", "event_id": event_id}],
            },
        )
    )
    assert stored["accepted"] == 1 and stored["event_ids"] == [event_id]

    async def recalled() -> bool:
        context = data(await mcp.call_tool("recall", {"user_id": user, "query": "what is my locker code?"}))
        return secret in context["prompt"]

    await eventually(recalled)


async def test_tools_list_with_schemas_and_annotations(memstream: AsyncMemstream, mode: str) -> None:
    server = build_server(lambda _ctx: memstream, defaults=Defaults(user_id="u1", agent_id="a"))
    async with Client(server, mode=mode) as mcp:  # type: ignore[arg-type]
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
    assert set(tools) == READ_TOOLS | WRITE_TOOLS
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 30, name
        assert tool.input_schema["type"] == "object"
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name in READ_TOOLS), name
        assert tool.annotations.destructive_hint is (name in DESTRUCTIVE_TOOLS), name
        assert tool.annotations.idempotent_hint is (name != "check_permission"), name
    remember = tools["remember"].input_schema
    assert remember["required"] == ["turns"]  # the user comes from the connection's default
    turn = remember["$defs"]["MemoryTurn"]
    assert set(turn["required"]) == {"role", "content"}
    assert turn["properties"]["role"]["enum"] == ["user", "assistant", "system", "tool"]
    search = tools["search_memory"].input_schema["properties"]
    assert {"query", "kinds", "scopes", "project_id", "session_id", "since", "until", "k"} <= set(search)
    assert "k" in tools["best_skills"].input_schema["properties"], "the count is k, as in REST"
    for name, tool in tools.items():
        assert tool.input_schema.get("additionalProperties") is False, name
    assert tools["related_entities"].input_schema["properties"]["depth"]["maximum"] == 4
    forget = tools["forget"].input_schema
    assert forget["required"] == ["memory_id"] and forget["properties"]["memory_id"]["format"] == "uuid"


async def test_remember_then_recall_and_search_with_filters(
    memstream: AsyncMemstream, running_worker: WorkerHandle, mode: str
) -> None:
    user = f"u-{uuid.uuid4().hex[:6]}"
    server = build_server(lambda _ctx: memstream, defaults=Defaults(agent_id="a"))
    async with Client(server, mode=mode) as mcp:  # type: ignore[arg-type]
        await remember_and_recall(mcp, user, "4512")
        data(
            await mcp.call_tool(
                "remember",
                {
                    "user_id": user,
                    "project_id": "garden",
                    "turns": [{"role": "user", "content": "The tomatoes need watering every morning."}],
                },
            )
        )

        async def found(arguments: dict[str, Any]) -> list[dict[str, Any]]:
            hits: list[dict[str, Any]] = data(await mcp.call_tool("search_memory", {"user_id": user, **arguments}))[
                "hits"
            ]
            return hits

        async def tomatoes_found() -> bool:
            hits = await found({"query": "tomatoes watering", "project_id": "garden", "kinds": ["episodic"]})
            return any("tomatoes" in h["content"] for h in hits)

        await eventually(tomatoes_found)
        later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
        assert await found({"query": "tomatoes watering", "since": later}) == []
        in_other_project = await found({"query": "tomatoes watering", "project_id": "kitchen"})
        assert all("tomatoes" not in h["content"] for h in in_other_project)
        only_facts = await found({"query": "tomatoes watering", "kinds": ["fact"]})
        assert all(h["kind"] == "fact" for h in only_facts)


async def test_forget_a_memory_found_by_search(
    memstream: AsyncMemstream, running_worker: WorkerHandle, mode: str
) -> None:
    """remember → search_memory finds it → forget its id → search finds it no more; forgetting it
    again repeats the answer, and an id that names nothing is an error result."""
    user = f"u-{uuid.uuid4().hex[:6]}"
    server = build_server(lambda _ctx: memstream, defaults=Defaults(agent_id="a"))
    async with Client(server, mode=mode) as mcp:  # type: ignore[arg-type]
        said = "My spare key hides under the blue flowerpot."
        data(await mcp.call_tool("remember", {"user_id": user, "turns": [{"role": "user", "content": said}]}))

        async def hits() -> list[dict[str, Any]]:
            found = data(await mcp.call_tool("search_memory", {"user_id": user, "query": "spare key flowerpot"}))
            return [h for h in found["hits"] if h["content"] == said]

        async def found() -> bool:
            return bool(await hits())

        await eventually(found)
        [hit] = await hits()
        forgotten = data(await mcp.call_tool("forget", {"memory_id": hit["id"]}))
        assert (forgotten["kind"], forgotten["id"], forgotten["repeated"]) == ("episode", hit["id"], False)
        assert await hits() == []
        again = data(await mcp.call_tool("forget", {"memory_id": hit["id"]}))
        assert again["repeated"] is True and again["forgotten_at"] == forgotten["forgotten_at"]
        unknown = await mcp.call_tool("forget", {"memory_id": str(uuid.uuid4())})
        not_an_id = await mcp.call_tool("forget", {"memory_id": "the blue flowerpot"})
    assert unknown.is_error and "404" in text_of(unknown) and "not_found" in text_of(unknown)
    assert not_an_id.is_error and "memory_id" in text_of(not_an_id)


async def test_check_permission_blocks_by_rule(memstream: AsyncMemstream, mode: str) -> None:
    await memstream.rules.create(tool="shell", effect="BLOCK", pattern=r"rm\s+-rf")
    server = build_server(lambda _ctx: memstream, defaults=Defaults(user_id="u1", session_id="s1"))
    async with Client(server, mode=mode) as mcp:  # type: ignore[arg-type]
        blocked = data(await mcp.call_tool("check_permission", {"tool": "shell", "command": "rm -rf /"}))
        other = data(await mcp.call_tool("check_permission", {"tool": "shell", "command": "ls -la"}))
    assert blocked["decision"] == "BLOCK" and blocked["rule_id"] and blocked["tier"] == "global"
    assert other["decision"] != "BLOCK"


async def test_a_connections_project_is_where_permissions_are_checked(memstream: AsyncMemstream, mode: str) -> None:
    """The model cannot pick a project whose rules allow what the connection's project blocks,
    and a command is judged whole (no cut: longer than the gateway judges is an error, no verdict)."""
    await memstream.rules.create(tool="shell", effect="BLOCK", pattern=r"rm\s+-rf", project_id="locked")
    await memstream.rules.create(tool="shell", effect="ALLOW", pattern=r"^rm -rf /tmp/x$", project_id="lax")
    server = build_server(lambda _ctx: memstream, defaults=Defaults(project_id="locked", session_id="s1"))
    async with Client(server, mode=mode) as mcp:  # type: ignore[arg-type]
        own = data(await mcp.call_tool("check_permission", {"tool": "shell", "command": "rm -rf /tmp/x"}))
        other = await mcp.call_tool(
            "check_permission", {"tool": "shell", "command": "rm -rf /tmp/x", "project_id": "lax"}
        )
        same = data(
            await mcp.call_tool("check_permission", {"tool": "shell", "command": "rm -rf /", "project_id": "locked"})
        )
        long = await mcp.call_tool("check_permission", {"tool": "shell", "command": "ls" + " " * 8200 + "; rm -rf /"})
    assert own["decision"] == "BLOCK" and same["decision"] == "BLOCK"
    assert other.is_error and "locked" in text_of(other)
    assert long.is_error and "decision" not in text_of(long)


async def test_a_connections_session_is_where_permissions_are_checked(memstream: AsyncMemstream, mode: str) -> None:
    """A connection pinned to a session cannot use another conversation's allow-once grant."""
    await memstream.permissions.allow_once(session_id="conv-B", tool="shell", command="terraform destroy")
    pinned = build_server(lambda _ctx: memstream, defaults=Defaults(session_id="conv-A"))
    async with Client(pinned, mode=mode) as mcp:  # type: ignore[arg-type]
        other = await mcp.call_tool(
            "check_permission", {"tool": "shell", "command": "terraform destroy", "session_id": "conv-B"}
        )
        own = data(await mcp.call_tool("check_permission", {"tool": "shell", "command": "terraform destroy"}))
    assert other.is_error and "conv-A" in text_of(other)
    assert own["decision"] == "PENDING"
    # A connection that names no session checks in the shared default, "mcp", and no other:
    # also when it binds a project.
    await memstream.permissions.allow_once(session_id="mcp", tool="shell", command="terraform destroy")
    for defaults in (Defaults(), Defaults(project_id="locked")):
        unpinned = build_server(lambda _ctx: memstream, defaults=defaults)
        async with Client(unpinned, mode=mode) as mcp:  # type: ignore[arg-type]
            chosen = await mcp.call_tool(
                "check_permission", {"tool": "shell", "command": "terraform destroy", "session_id": "conv-B"}
            )
        assert chosen.is_error and "'mcp'" in text_of(chosen), defaults
    async with Client(build_server(lambda _ctx: memstream), mode=mode) as mcp:  # type: ignore[arg-type]
        granted = data(await mcp.call_tool("check_permission", {"tool": "shell", "command": "terraform destroy"}))
    assert granted["decision"] == "ALLOW" and granted["tier"] == "allow_once", "the default session's own grant"


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ([("X-Memstream-Project-Id", "locked"), ("x-memstream-project-id", "lax")], "more than once"),
        ([("X-Memstream-Project-Id", "")], "empty"),
        ([("X-Memstream-Session-Id", "  ")], "empty"),
        ([("X_Memstream_Project_Id", "locked")], "underscores"),
    ],
)
def test_a_default_header_given_twice_empty_or_with_underscores_is_refused(
    headers: list[tuple[str, str]], why: str
) -> None:
    with pytest.raises(ToolError, match=why):
        Defaults().overridden_by(headers)


def test_a_default_header_names_its_default() -> None:
    assert Defaults().overridden_by([("x-memstream-project-id", "p"), ("x-other", "o")]).project_id == "p"


async def test_a_gateway_refusal_is_an_error_result_with_its_message(memstream: AsyncMemstream, mode: str) -> None:
    server = build_server(lambda _ctx: memstream)
    async with Client(server, mode=mode) as mcp:  # type: ignore[arg-type]
        invalid = await mcp.call_tool("search_memory", {"user_id": "no such/user", "query": "x"})
        no_user = await mcp.call_tool("recall", {"query": "x"})  # no argument and no default
        bad_args = await mcp.call_tool("related_entities", {"user_id": "u", "entity": "x", "depth": 9})
        naive = await mcp.call_tool("search_memory", {"user_id": "u", "query": "x", "since": "2020-01-01T00:00:00"})
        comma = await mcp.call_tool("search_memory", {"user_id": "u", "query": "x", "tags": ["a,b"]})
    assert invalid.is_error and "422" in text_of(invalid) and "user_id" in text_of(invalid)
    assert no_user.is_error and "user_id is required" in text_of(no_user)
    assert bad_args.is_error and "depth" in text_of(bad_args)
    assert naive.is_error and "timezone" in text_of(naive)  # refused by the SDK, said as the SDK says it
    assert comma.is_error and "comma" in text_of(comma)
    for result in (invalid, no_user, bad_args, naive, comma):
        assert "Traceback" not in text_of(result)


async def test_unknown_arguments_are_refused_by_name(memstream: AsyncMemstream, mode: str) -> None:
    """Issue 46: ``k=100000`` ran with the default 10 (the count was ``limit``, and an unknown
    argument was dropped). The count is ``k``, as in REST; an argument a tool does not take is
    an error naming it and what the tool takes; k beyond the maximum is an error, not 10."""
    server = build_server(lambda _ctx: memstream, defaults=Defaults(user_id="u1", agent_id="a"))
    async with Client(server, mode=mode) as mcp:  # type: ignore[arg-type]
        old_name = await mcp.call_tool("search_memory", {"query": "x", "limit": 5})
        typos = await mcp.call_tool("recall", {"query": "x", "budgett": 500, "projectid": "p"})
        too_many = await mcp.call_tool("search_memory", {"query": "x", "k": 100000})
        skills = await mcp.call_tool("best_skills", {"task": "deploy", "limit": 2})
        counted = await mcp.call_tool("search_memory", {"query": "x", "k": 3})
        best = await mcp.call_tool("best_skills", {"task": "deploy", "k": 2})
    assert old_name.is_error and "unknown argument limit" in text_of(old_name)
    assert "this tool takes query, user_id, project_id, session_id, kinds" in text_of(old_name)
    assert typos.is_error and "unknown arguments budgett, projectid" in text_of(typos)
    assert too_many.is_error and "k" in text_of(too_many) and "100" in text_of(too_many)
    assert skills.is_error and "unknown argument limit" in text_of(skills)
    assert data(counted)["k"] == 3 and not best.is_error
    for result in (old_name, typos, too_many, skills):
        assert "Traceback" not in text_of(result)


async def test_resources_facts_and_buffer(memstream: AsyncMemstream, running_worker: WorkerHandle) -> None:
    user = f"u-{uuid.uuid4().hex[:6]}"
    await memstream.turns.publish(
        {"user_id": user, "agent_id": "a", "session_id": "s1", "role": "user", "content": "Hello from the buffer."}
    )
    server = build_server(lambda _ctx: memstream)
    async with Client(server) as mcp:
        templates = {t.uri_template for t in (await mcp.list_resource_templates()).resource_templates}
        assert templates == {
            "memstream://users/{user_id}/facts",
            "memstream://users/{user_id}/sessions/{session_id}/buffer",
        }

        async def buffered() -> bool:
            read = await mcp.read_resource(f"memstream://users/{user}/sessions/s1/buffer")
            return "Hello from the buffer." in read.contents[0].text  # type: ignore[union-attr]

        await eventually(buffered)
        facts = await mcp.read_resource(f"memstream://users/{user}/facts")
        assert f'"user_id":"{user}"' in facts.contents[0].text.replace(" ", "")  # type: ignore[union-attr]


# --- over streamable HTTP at the gateway's /mcp ------------------------------------------------


@pytest.fixture(scope="module")
def served(stack: RunningStack) -> Iterator[Served]:
    with serve_gateway(stack, "gateway-mcp") as gateway:
        yield gateway


@contextlib.asynccontextmanager
async def over_http(served: Served, api_key: str | None, **headers: str) -> AsyncIterator[Client]:
    """An MCP client of the served gateway's /mcp (the transport leaves a given HTTP client open)."""
    sent = {"authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx2.AsyncClient(headers={**sent, **headers}, timeout=30) as http:
        async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as mcp:  # type: ignore[arg-type]
            yield mcp


async def test_http_without_a_key_is_401(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        response = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"accept": "application/json, text/event-stream"},
        )
        wrong = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"authorization": f"Bearer msk_{'0' * 16}_{'x' * 30}"},
        )
    assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["error"]["code"] == "unauthorized"
    assert wrong.status_code == 401


async def test_http_holds_no_stream_open_and_takes_either_key_header(stack: RunningStack, served: Served) -> None:
    """A stateless server answers a POST and is done: GET (a server-to-client stream, which one
    key could hold open by the thousand) is 405 at once. ``X-API-Key`` works as ``Bearer`` does."""
    key = stack.key(f"t-{uuid.uuid4().hex[:10]}")
    async with httpx.AsyncClient(base_url=served.url, timeout=10) as http:
        stream = await http.get("/mcp", headers={"authorization": f"Bearer {key}", "accept": "text/event-stream"})
        ended = await http.request("DELETE", "/mcp", headers={"authorization": f"Bearer {key}"})
    assert stream.status_code == 405 and ended.status_code == 405
    async with over_http(served, None, **{"x-api-key": key}) as mcp:
        tools = (await mcp.list_tools()).tools
    assert {t.name for t in tools} == READ_TOOLS | WRITE_TOOLS


async def test_http_tenant_isolation_and_scopes(
    stack: RunningStack, served: Served, running_worker: WorkerHandle
) -> None:
    tenant_a, tenant_b = f"t-{uuid.uuid4().hex[:10]}", f"t-{uuid.uuid4().hex[:10]}"
    key_a, key_b = stack.key(tenant_a), stack.key(tenant_b)
    user = "shared-name"
    async with over_http(served, key_b, **{"x-memstream-agent-id": "a"}) as mcp_b:
        tools = (await mcp_b.list_tools()).tools
        assert {t.name for t in tools} == READ_TOOLS | WRITE_TOOLS
        await remember_and_recall(mcp_b, user, "7731")

    async with over_http(served, key_a, **{"x-memstream-user-id": user}) as mcp_a:
        context = data(await mcp_a.call_tool("recall", {"query": "what is my locker code?"}))
        hits = data(await mcp_a.call_tool("search_memory", {"query": "locker code"}))["hits"]
        facts = data(await mcp_a.call_tool("list_facts", {}))
    assert "7731" not in context["prompt"]
    assert hits == [] and facts["facts"] == []  # the same user name in another tenant: nothing, and no error

    # A key bound to another agent of tenant B sees only that agent's memory (and shared memory).
    other_agent = stack.key(tenant_b, agent="someone-else")
    async with over_http(served, other_agent, **{"x-memstream-user-id": user}) as mcp_o:
        theirs = data(await mcp_o.call_tool("recall", {"query": "what is my locker code?"}))
        own = data(await mcp_o.call_tool("remember", {"turns": [{"role": "user", "content": "from the other agent"}]}))
    assert "7731" not in theirs["prompt"] and own["accepted"] == 1

    read_only = stack.key(tenant_a, scopes=("read",))
    async with over_http(served, read_only, **{"x-memstream-user-id": user, "x-memstream-agent-id": "a"}) as mcp_r:
        refused = await mcp_r.call_tool("remember", {"turns": [{"role": "user", "content": "not stored"}]})
        allowed = await mcp_r.call_tool("search_memory", {"query": "anything"})
    assert refused.is_error and "403" in text_of(refused) and "ingest" in text_of(refused)
    assert not allowed.is_error

    ingest_only = stack.key(tenant_a, scopes=("ingest",))
    async with over_http(served, ingest_only, **{"x-memstream-user-id": user}) as mcp_i:
        no_read = await mcp_i.call_tool("recall", {"query": "anything"})
    assert no_read.is_error and "403" in text_of(no_read) and "read" in text_of(no_read)


#: Where the MCP URL configuration is documented, and the address it names.
URL_CONFIG_PAGES = [ROOT / "README.md", ROOT / "docs" / "mcp.md"]
DOCUMENTED_MCP_URL = "http://127.0.0.1:8080/mcp"


def documented_url_config(page: Path) -> dict[str, str]:
    """The headers of ``page``'s MCP URL configuration, as written (its one JSON block naming the URL)."""
    [config] = [json.loads(b) for b in fenced_blocks(page.read_text(), "json") if DOCUMENTED_MCP_URL in b]
    server = config["mcpServers"]["memstream"]
    assert server["url"] == DOCUMENTED_MCP_URL
    headers: dict[str, str] = server["headers"]
    return headers


@pytest.mark.parametrize("page", URL_CONFIG_PAGES, ids=lambda p: p.name)
async def test_the_documented_url_configuration_remembers_with_the_quickstarts_key(
    stack: RunningStack, served: Served, running_worker: WorkerHandle, page: Path
) -> None:
    """Issue 46: the README's MCP configuration failed on ``remember`` with the quickstart's key
    (tenant-level, ingest and read): 422, agent_id required. As written, with that key in place
    of ``msk_...``, a model's ``remember`` and ``recall`` name neither user nor agent, and work."""
    headers = documented_url_config(page)
    assert headers.pop("Authorization") == "Bearer msk_..."
    key = stack.key(
        f"t-{uuid.uuid4().hex[:10]}", scopes=("ingest", "read")
    )  # memstream keys create --scopes ingest,read
    async with over_http(served, key, **headers) as mcp:
        stored = data(
            await mcp.call_tool("remember", {"turns": [{"role": "user", "content": "My bike lock is 3381."}]})
        )
        assert stored["accepted"] == 1

        async def recalled() -> bool:
            return "3381" in data(await mcp.call_tool("recall", {"query": "what is my bike lock code?"}))["prompt"]

        await eventually(recalled)


async def test_remember_without_an_agent_says_how_to_name_one(stack: RunningStack, served: Served) -> None:
    key = stack.key(f"t-{uuid.uuid4().hex[:10]}", scopes=("ingest", "read"))
    async with over_http(served, key, **{"x-memstream-user-id": "alice"}) as mcp:
        refused = await mcp.call_tool("remember", {"turns": [{"role": "user", "content": "not stored"}]})
        outcome = await mcp.call_tool("record_tool_outcome", {"skill": "deploy", "status": "success"})
    for result in (refused, outcome):
        assert result.is_error and "422" in text_of(result) and "agent_id is required" in text_of(result)
        assert "X-Memstream-Agent-Id" in text_of(result) and "--agent-id" in text_of(result)


async def test_http_refuses_unknown_arguments_by_name(stack: RunningStack, served: Served) -> None:
    key = stack.key(f"t-{uuid.uuid4().hex[:10]}", scopes=("ingest", "read"))
    async with over_http(served, key, **{"x-memstream-user-id": "alice"}) as mcp:
        old_name = await mcp.call_tool("search_memory", {"query": "x", "limit": 100000})
        too_many = await mcp.call_tool("search_memory", {"query": "x", "k": 100000})
        counted = await mcp.call_tool("search_memory", {"query": "x", "k": 7})
    assert old_name.is_error and "unknown argument limit" in text_of(old_name)
    assert too_many.is_error and "less than or equal to 100" in text_of(too_many)
    assert data(counted)["k"] == 7


# --- over stdio: `memstream mcp` as a subprocess -------------------------------------------------


async def test_stdio_remember_and_recall(stack: RunningStack, served: Served, running_worker: WorkerHandle) -> None:
    tenant = f"t-{uuid.uuid4().hex[:10]}"
    server = StdioServerParameters(
        command=os.path.join(os.path.dirname(sys.executable), "memstream"),
        args=["mcp", "--base-url", served.url, "--user-id", "desk-user", "--agent-id", "desktop"],
        env={"MEMSTREAM_API_KEY": stack.key(tenant), "MEMSTREAM_DATA_DIR": str(stack.settings.data_dir)},
    )
    async with Client(server) as mcp:
        await remember_and_recall(mcp, "desk-user", "9023")


@pytest.mark.parametrize("flag", ["--project-id", "--session-id"])
def test_an_empty_binding_on_the_command_line_is_refused(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    from memstream_client.mcp.stdio import main

    assert main(["--api-key", "msk_x", flag, ""]) == 2
    assert f"{flag} is empty" in capsys.readouterr().err
