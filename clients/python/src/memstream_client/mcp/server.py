"""memstream as MCP tools and resources, over any gateway the SDK can reach.

One implementation, two transports: ``memstream mcp`` serves it on stdio with one client (a key
from the command line or the environment), and the gateway mounts it at ``/mcp`` with a client
per request that carries the caller's own key (``agents_gateway/mcp.py``). Either way every
call is an ordinary gateway request, so the key's tenant, agent binding and scopes decide what
a tool may see and do, exactly as for REST.

Who the user is comes from each tool's ``user_id``; a connection can set a default
(``--user-id``, or the ``X-Memstream-User-Id`` header over HTTP), and so can the agent, the
project and the session.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator
from pydantic import ValidationError as PydanticValidationError

from memstream_client import AsyncMemstream
from memstream_client.errors import MemstreamError

#: Per-connection defaults over HTTP: headers an MCP client can be configured to send.
DEFAULT_HEADERS = {
    "user_id": "x-memstream-user-id",
    "agent_id": "x-memstream-agent-id",
    "project_id": "x-memstream-project-id",
    "session_id": "x-memstream-session-id",
}

INSTRUCTIONS = (
    "Long-term memory for this agent. Call `recall` with the user's message at the start of a "
    "turn for what to know (facts, the conversation so far, relevant memories, within a token "
    "budget); `remember` what was said; `search_memory` for something specific; `list_facts` "
    "and `fact_history` for what is known about the user and how it changed; `forget` a memory "
    "(the id of a search hit) when the user asks that it be forgotten."
)

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
#: Writes add memory (never overwrite or delete it) and are idempotent by event id.
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
#: Forgetting deletes a memory for good; asking again changes nothing more.
#: A permission check reads rules, but uses up the allow-once grant that allows a command.
CHECK = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
FORGET = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


@dataclass(frozen=True)
class Defaults:
    """What a tool uses when its caller leaves an argument out."""

    user_id: str | None = None
    agent_id: str | None = None
    project_id: str | None = None
    #: The connection's session, when it names one (``--session-id``, the header); else
    #: ``session`` is the shared default, ``mcp``.
    session_id: str | None = None

    @property
    def session(self) -> str:
        return self.session_id or DEFAULT_SESSION

    def overridden_by(self, headers: list[tuple[str, str]] | None) -> Defaults:
        """These defaults, with any an HTTP connection sets in its headers (a header given more
        than once is refused: which one would bind a permission check is ambiguous)."""
        if not headers:
            return self
        found: dict[str, str] = {}
        names = {name: field for field, name in DEFAULT_HEADERS.items()}
        for name, value in headers:
            lowered = name.lower()
            field = names.get(lowered)
            if field is None:
                if lowered.replace("_", "-") in names:  # some proxies read it with hyphens
                    raise ToolError(f"the header {name} is spelled with underscores: use hyphens")
                continue
            if field in found:
                raise ToolError(f"the header {name} is given more than once")
            if not value.strip():
                raise ToolError(f"the header {name} is empty")
            found[field] = value
        return replace(self, **found) if found else self


#: The session of a connection that names none.
DEFAULT_SESSION = "mcp"

#: What a write needs when neither the key, the call nor the connection names an agent.
#: memstream makes none up: a memory belongs to the agent that wrote it, and keys bound to
#: that agent see it (under an invented agent, no agent's key would).
NO_AGENT = (
    "name the agent: pass agent_id, or give the connection one (the X-Memstream-Agent-Id header over "
    "HTTP, --agent-id on stdio), or use a key bound to an agent"
)


#: The client for the current call: one fixed client on stdio, the caller's key over HTTP.
ClientSource = Callable[[Context], AsyncMemstream]


class KnownArguments(ArgModelBase):
    """A tool's arguments, every one known: an argument the tool does not take (``k=100000``
    where the count is named otherwise, a misspelt filter) is an error that names it and the
    ones the tool takes, never silently dropped. The arguments' values are not repeated back."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    @model_validator(mode="before")
    @classmethod
    def _only_known(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = [field.alias or name for name, field in cls.model_fields.items()]
            unknown = sorted(str(name) for name in data if name not in known)
            if unknown:
                raise ValueError(
                    f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}: "
                    f"this tool takes {', '.join(known)}"
                )
        return data


def refusing_unknown_arguments(tool: Tool) -> Tool:
    """``tool`` with arguments that refuse unknown names (``KnownArguments``), and an input
    schema that says so (``additionalProperties: false``)."""
    given = tool.fn_metadata.arg_model
    strict = create_model(given.__name__, __base__=(given, KnownArguments))
    metadata = tool.fn_metadata.model_copy(update={"arg_model": strict})
    return tool.model_copy(update={"fn_metadata": metadata, "parameters": strict.model_json_schema(by_alias=True)})


class MemoryTurn(BaseModel):
    """One turn to remember."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system", "tool"] = Field(description="Who said it.")
    content: str = Field(min_length=1, description="What was said (or, for a tool turn, its outcome).")
    event_id: uuid.UUID | None = Field(
        default=None, description="Idempotency key: the same id sent twice is stored once. Made up when absent."
    )
    tool_name: str | None = Field(default=None, description="For a tool turn: which tool.")
    tool_status: Literal["success", "failure"] | None = Field(default=None, description="For a tool turn.")
    tags: list[str] = Field(default_factory=list, description="Labels to find it by later.")
    event_time: datetime | None = Field(default=None, description="When it happened (ISO 8601); now when absent.")


UserArg = Annotated[
    str | None, Field(description="The user whose memory this is; the connection's default if omitted.")
]
ProjectArg = Annotated[str | None, Field(description="Only this project's memory (and memory of no project).")]
SessionArg = Annotated[str | None, Field(description="The conversation; the connection's default if omitted.")]


def build_server(
    client_source: ClientSource,
    *,
    defaults: Defaults | None = None,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
) -> MCPServer:
    """The memstream MCP server: its tools and resources, calling the gateway through the
    client ``client_source`` gives for each call."""
    base = defaults or Defaults()
    tools: list[Tool] = []

    def tool(*, description: str, annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Registers a tool (as ``MCPServer.tool`` would), refusing unknown arguments."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            tools.append(refusing_unknown_arguments(Tool.from_function(fn, description=description,
                                                                       annotations=annotations)))  # fmt: skip
            return fn

        return register

    def defaults_for(ctx: Context) -> Defaults:
        try:
            headers = ctx.headers
        except (AttributeError, LookupError, ValueError):  # stdio and in-memory calls have no headers
            headers = None
        return base.overridden_by(list(headers.items()) if headers else None)

    def user_of(ctx: Context, user_id: str | None) -> str:
        chosen = user_id or defaults_for(ctx).user_id
        if not chosen:
            raise ToolError("user_id is required: this connection has no default user")
        return chosen

    @tool(
        description="Store conversation turns in long-term memory. Returns at once (extraction of facts "
        "happens in the background); a turn sent again with the same event_id is stored once.",
        annotations=WRITE,
    )
    async def remember(
        ctx: Context,
        turns: Annotated[list[MemoryTurn], Field(min_length=1, max_length=500, description="The turns, in order.")],
        user_id: UserArg = None,
        session_id: SessionArg = None,
        project_id: ProjectArg = None,
        agent_id: Annotated[str | None, Field(description="The agent; the key's own when it is bound to one.")] = None,
        shared: Annotated[bool, Field(description="Visible to every agent of the tenant.")] = False,
    ) -> dict[str, Any]:
        known = defaults_for(ctx)
        common = {
            "user_id": user_of(ctx, user_id),
            "session_id": session_id or known.session,
            "project_id": project_id or known.project_id,
            "agent_id": agent_id or known.agent_id,
            "shared": shared,
        }
        batch = [
            {**{k: v for k, v in common.items() if v is not None}, **turn.model_dump(mode="json", exclude_none=True)}
            for turn in turns
        ]
        async with _gateway_errors(agent_hint=common["agent_id"] is None):
            accepted = await client_source(ctx).turns.publish(batch)
        return _plain(accepted)

    @tool(
        description="What to know before answering: the user's facts, the conversation so far, a summary "
        "and the memories most relevant to `query`, packed into `budget` tokens as a ready prompt.",
        annotations=READ,
    )
    async def recall(
        ctx: Context,
        query: Annotated[str, Field(min_length=1, max_length=2000, description="The user's message or a question.")],
        user_id: UserArg = None,
        session_id: SessionArg = None,
        project_id: ProjectArg = None,
        budget: Annotated[int, Field(ge=64, le=200_000, description="Tokens the context may use.")] = 2000,
    ) -> dict[str, Any]:
        known = defaults_for(ctx)
        async with _gateway_errors():
            context = await client_source(ctx).context.get(
                user_of(ctx, user_id),
                query,
                session_id=session_id or known.session,
                project_id=project_id or known.project_id,
                budget=budget,
            )
        return _plain(context)

    @tool(
        description="Search long-term memory (turns, facts, summaries, lessons, skills) by meaning and by words, "
        "with optional filters. Each hit has its text, kind, time and score.",
        annotations=READ,
    )
    async def search_memory(
        ctx: Context,
        query: Annotated[str, Field(min_length=1, max_length=2000, description="What to look for.")],
        user_id: UserArg = None,
        project_id: ProjectArg = None,
        session_id: Annotated[str | None, Field(description="Also that session's session-scoped facts.")] = None,
        kinds: Annotated[
            list[Literal["episodic", "procedural", "summary", "fact", "skill"]] | None,
            Field(description="Only these kinds of memory (all when omitted)."),
        ] = None,
        scopes: Annotated[
            list[Literal["global", "project", "session"]] | None, Field(description="Facts only: these scopes.")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Any of these tags.")] = None,
        since: Annotated[datetime | None, Field(description="Not before (ISO 8601 with a timezone).")] = None,
        until: Annotated[datetime | None, Field(description="Not after (ISO 8601 with a timezone).")] = None,
        k: Annotated[int, Field(ge=1, le=100, description="How many hits.")] = 10,
    ) -> dict[str, Any]:
        async with _gateway_errors():
            found = await client_source(ctx).search(
                user_of(ctx, user_id),
                query,
                project_id=project_id or defaults_for(ctx).project_id,
                session_id=session_id,
                memory_types=kinds,
                scopes=scopes,
                tags=tags,
                since=since,
                until=until,
                k=k,
            )
        return _plain(found)

    @tool(
        description="The facts known about the user that apply here: the global ones, plus the project's and "
        "the session's when given (the connection's project by default); current ones, or those valid at `as_of`.",
        annotations=READ,
    )
    async def list_facts(
        ctx: Context,
        user_id: UserArg = None,
        scope: Annotated[Literal["global", "project", "session"] | None, Field(description="Only this scope.")] = None,
        project_id: ProjectArg = None,
        session_id: Annotated[str | None, Field(description="Also that session's facts.")] = None,
        as_of: Annotated[datetime | None, Field(description="The facts valid then (ISO 8601); now if omitted.")] = None,
    ) -> dict[str, Any]:
        async with _gateway_errors():
            facts = await client_source(ctx).entities.list(
                user_of(ctx, user_id),
                scope=scope,
                project_id=project_id or defaults_for(ctx).project_id,
                session_id=session_id,
                at=as_of,
            )
        return _plain(facts)

    @tool(
        description="How what is known about one entity (e.g. 'user', a project name) changed over time: every "
        "version with when it was valid and why it changed.",
        annotations=READ,
    )
    async def fact_history(
        ctx: Context,
        entity: Annotated[str, Field(min_length=1, max_length=200, description="The entity's name.")],
        user_id: UserArg = None,
    ) -> dict[str, Any]:
        async with _gateway_errors():
            history = await client_source(ctx).entities.history(entity, user_id=user_of(ctx, user_id))
        return _plain(history)

    @tool(
        description="Entities related to one entity in the user's knowledge graph, up to `depth` hops away.",
        annotations=READ,
    )
    async def related_entities(
        ctx: Context,
        entity: Annotated[str, Field(min_length=1, max_length=200, description="Where to start.")],
        depth: Annotated[int, Field(ge=1, le=4, description="Hops, 1 to 4.")] = 1,
        direction: Annotated[Literal["out", "in", "both"], Field(description="Which edges to follow.")] = "out",
        user_id: UserArg = None,
    ) -> dict[str, Any]:
        async with _gateway_errors():
            graph = await client_source(ctx).graph.neighbors(
                entity, depth=depth, direction=direction, user_id=user_of(ctx, user_id)
            )
        return _plain(graph)

    @tool(
        description="The approaches that worked best for a kind of task before, with success rates and advice.",
        annotations=READ,
    )
    async def best_skills(
        ctx: Context,
        task: Annotated[str, Field(min_length=1, max_length=500, description="The task, e.g. 'deploy the api'.")],
        user_id: UserArg = None,
        k: Annotated[int, Field(ge=1, le=50, description="How many skills.")] = 5,
    ) -> dict[str, Any]:
        async with _gateway_errors():
            skills = await client_source(ctx).skills.best(user_of(ctx, user_id), task, k=k)
        return _plain(skills)

    @tool(
        description="Record how a tool call or a whole task went, so that `best_skills` learns from it. "
        "Sent again with the same event_id, it is stored once.",
        annotations=WRITE,
    )
    async def record_tool_outcome(
        ctx: Context,
        skill: Annotated[str, Field(min_length=1, max_length=128, description="What was attempted, e.g. 'deploy'.")],
        status: Annotated[Literal["success", "failure"], Field(description="How it went.")],
        tool_name: Annotated[str | None, Field(description="The tool used.")] = None,
        feedback: Annotated[str | None, Field(max_length=4000, description="What went wrong, or advice.")] = None,
        steps: Annotated[list[str] | None, Field(description="What was done, in order.")] = None,
        event_id: Annotated[uuid.UUID | None, Field(description="Idempotency key; made up when absent.")] = None,
        user_id: UserArg = None,
        session_id: SessionArg = None,
        project_id: ProjectArg = None,
    ) -> dict[str, Any]:
        known = defaults_for(ctx)
        event: dict[str, Any] = {
            "user_id": user_of(ctx, user_id),
            "session_id": session_id or known.session,
            "project_id": project_id or known.project_id,
            "agent_id": known.agent_id,
            "skill": skill,
            "status": status,
            "tool_name": tool_name,
            "feedback": feedback,
            "steps": steps,
            "event_id": str(event_id) if event_id else None,
        }
        async with _gateway_errors(agent_hint=known.agent_id is None):
            accepted = await client_source(ctx).tool_events.record({k: v for k, v in event.items() if v is not None})
        return _plain(accepted)

    @tool(
        description="Forget one memory for good, e.g. when the user asks to: `memory_id` is the `id` of a "
        "`search_memory` hit (a turn, a summary, a lesson or a fact). It is never found, recalled or rebuilt "
        "again; a fact's earlier version takes its place. Forgetting it again answers the same (`repeated`).",
        annotations=FORGET,
    )
    async def forget(
        ctx: Context,
        memory_id: Annotated[uuid.UUID, Field(description="The `id` of a `search_memory` hit.")],
    ) -> dict[str, Any]:
        async with _gateway_errors():
            forgotten = await client_source(ctx).memories.delete(memory_id)
        return _plain(forgotten)

    @tool(
        description="Whether a command may run: ALLOW, BLOCK or PENDING (ask a person), with the tier and the "
        "rule that decided. Call it right before running a shell command or another risky tool: an ALLOW "
        "that an operator's allow-once grant gave is used up by this check. Run the command only on ALLOW, "
        "exactly as checked. A connection with a project checks in that project only.",
        annotations=CHECK,
    )
    async def check_permission(
        ctx: Context,
        tool: Annotated[str, Field(min_length=1, max_length=128, description="The tool, e.g. 'shell'.")],
        command: Annotated[str, Field(min_length=1, max_length=8192, description="The command or arguments.")],
        session_id: Annotated[
            str | None, Field(description="The conversation: the connection's; another is an error.")
        ] = None,
        project_id: ProjectArg = None,
    ) -> dict[str, Any]:
        known = defaults_for(ctx)
        # The rules and the grants that apply are the operator's choice, not the model's: a
        # connection with a project checks in it, and every connection in its own session
        # (its grants are the ones an operator made for it), in no other.
        if known.project_id and project_id and project_id != known.project_id:
            raise ToolError(f"this connection checks permissions in project {known.project_id!r} only")
        if session_id and session_id != known.session:
            raise ToolError(f"this connection checks permissions in session {known.session!r} only")
        async with _gateway_errors():
            verdict = await client_source(ctx).permissions.evaluate(
                tool=tool,
                command=command,
                session_id=known.session,
                project_id=known.project_id or project_id,
                agent_id=known.agent_id,
            )
        return _plain(verdict)

    server = MCPServer(
        name="memstream",
        title="memstream memory",
        instructions=INSTRUCTIONS,
        token_verifier=token_verifier,
        auth=auth,
        tools=tools,
    )

    @server.resource(
        "memstream://users/{user_id}/facts",
        name="facts",
        description="The user's current global facts.",
        mime_type="application/json",
    )
    async def facts_resource(user_id: str, ctx: Context) -> dict[str, Any]:
        async with _gateway_errors(ResourceError):
            return _plain(await client_source(ctx).entities.list(user_id))

    @server.resource(
        "memstream://users/{user_id}/sessions/{session_id}/buffer",
        name="session_buffer",
        description="The session's recent turns and rolling summary.",
        mime_type="application/json",
    )
    async def buffer_resource(user_id: str, session_id: str, ctx: Context) -> dict[str, Any]:
        async with _gateway_errors(ResourceError):
            return _plain(await client_source(ctx).sessions.buffer(session_id, user_id=user_id))

    return server


@contextlib.asynccontextmanager
async def _gateway_errors(error: type[Exception] = ToolError, *, agent_hint: bool = False) -> AsyncIterator[None]:
    """Turns the gateway's refusals into the MCP error a model can read: its code and message,
    never a stack trace (``agent_hint``: no agent was named, and a refusal for want of one
    says how to name it, ``NO_AGENT``)."""
    try:
        yield
    except MemstreamError as exc:
        described = _describe(exc)
        if agent_hint and "agent_id" in described:
            described = f"{described}: {NO_AGENT}"
        raise error(described) from None
    except PydanticValidationError as exc:  # refused by the SDK's models before sending
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise error(f"invalid arguments: {fields}") from None


def _describe(exc: MemstreamError) -> str:
    status = getattr(exc, "status_code", None)
    code = getattr(exc, "code", None)
    message = getattr(exc, "message", None) or str(exc)
    prefix = " ".join(str(part) for part in (status, code) if part)
    return f"{prefix}: {message}" if prefix else message


def _plain(value: Any) -> dict[str, Any]:
    """A JSON object for the tool result (models dumped as the gateway sent them)."""
    if isinstance(value, BaseModel):
        dumped: dict[str, Any] = value.model_dump(mode="json")
        return dumped
    if isinstance(value, dict):
        return value
    return {"result": value}
