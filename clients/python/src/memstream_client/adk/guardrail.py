"""The permission guardrail: every tool call of an ADK agent is evaluated by memstream's
permission engine (``/v1/permissions/evaluate``) before it runs.

It is a second seat of a decision the server makes, so it is never weaker than the server:

- it judges **the exact string** it describes the call with (``command_of``), never a part
  of it: a command the service refuses to judge (too long, a control character) is denied;
- **only an explicit ALLOW runs the tool.** BLOCK does not; the model gets
  ``{"status": "DENIED", "tool", "rule", "error"}`` and can explain why. PENDING (no rule
  decided) does not run either: a confirmation is requested from the person
  (``tool_context.request_confirmation``) and the model is told that approval is pending;
  once an operator grants it (``/v1/permissions/allow-once``), the same command runs once.
  Any other answer — a refusal of the input (4xx), a rate limit, a server error, a body
  that is not a verdict, a decision it does not know — denies, saying why;
- ``fail_open=True`` lets a call run only when the service **cannot be reached**: no
  connection, a timeout, or a 502/503/504 from a proxy in front of it
  (``service_unreachable``). A 4xx is never "unavailable": the caller chose that input; nor is
  an answer of the gateway itself (its error shape: a 503 ``over_capacity`` is an answer, and
  a client can bring it about).
- a call of a function tool is judged with the arguments the function will get: its
  defaults included, and a call naming an argument the function does not take is denied
  (ADK drops such arguments after the guardrail has decided).

memstream's own read-only memory tools (``search_archived_memory`` made by
``archival_search_tool``, ADK's ``load_memory`` and ``preload_memory``) are pre-approved
here (tier 0), without a round trip — by what the tool *is*, not by its name: another tool
that takes one of those names is evaluated like any other.

The guardrail judges the arguments as it receives them. A callback that runs after it and
changes them (an agent's ``before_tool_callback`` after the plugin, or after this one in a
list) changes what runs after the decision: put the guardrail last.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memstream_client import AsyncMemstream
from memstream_client.errors import APIConnectionError, APIStatusError, MemstreamError

log = logging.getLogger(__name__)

#: The attribute that marks a function as memstream's own memory reader (``archival_search_tool``).
MEMORY_READER = "__memstream_reads_memory_only__"
#: ADK's own memory tools, by class (module, name): they only read the runner's memory service.
_ADK_MEMORY_TOOLS = frozenset(
    {
        ("google.adk.tools.load_memory_tool", "LoadMemoryTool"),
        ("google.adk.tools.preload_memory_tool", "PreloadMemoryTool"),
    }
)
#: Answers of a proxy in front of the gateway that mean it could not be reached.
UNREACHABLE_STATUSES = frozenset({502, 503, 504})


def reads_memory_only(tool: Any) -> bool:
    """Whether ``tool`` is one of the tools that only read the agent's memory: memstream's
    archival search, or ADK's ``LoadMemoryTool`` / ``PreloadMemoryTool`` (exactly those
    classes). Judged by the object, never by its name."""
    if getattr(getattr(tool, "func", None), MEMORY_READER, False) is True:
        return True
    kind = type(tool)
    return (kind.__module__, kind.__qualname__) in _ADK_MEMORY_TOOLS


#: The longest command the permission engine judges (``docs/permissions.md``): a longer one is
#: denied here, before anything is sent. Sent, it was refused with 413 — or, at megabytes, the
#: gateway answered and closed while the body was still going out, which reads as no answer.
MAX_COMMAND_CHARS = 8192


def service_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the permission service could not be reached (no answer, a
    timeout, a proxy's 502/503/504 — not an answer with an ``error`` object, the gateway's
    error shape, which is an answer): the only failures ``fail_open`` lets a call through."""
    if isinstance(exc, APIConnectionError):
        return True
    if not isinstance(exc, APIStatusError) or exc.status_code not in UNREACHABLE_STATUSES:
        return False
    return exc.code is None and not _error_shaped(exc.response)


def _error_shaped(response: Any) -> bool:
    """Whether an answer's body is a JSON object with an ``error`` member."""
    try:
        body = json.loads(response.content)
    except (ValueError, AttributeError):
        return False
    return isinstance(body, dict) and "error" in body


def command_of(tool_name: str, args: dict[str, Any]) -> str:
    """What a call asks for, as the permission engine matches it: a call with one argument, a
    string (a shell tool's command line), is that string; any other call is the tool's name
    and all its arguments as sorted JSON (``run_in_dir {"command": "ls", "cwd": "/w"}``: the
    engine reads a command's first word as its program, and a rule names it) — so a rule
    never sees one argument while the tool acts on another. The JSON escapes only quotes and
    backslashes: every other character of a string is itself, so a line break or a control
    character in an argument reaches the engine as it reaches the tool (escaped,
    ``ls\\ntouch x`` would be one command to a rule and two to a shell). A tool whose command is
    spread over several arguments can say how to read it (``describe=``)."""
    if len(args) == 1:
        [value] = args.values()
        if isinstance(value, str) and value.strip():
            return value
    return f"{tool_name} {_as_judged(args)}" if args else tool_name


def _as_judged(value: Any) -> str:
    """``value`` as sorted JSON whose strings keep every character but quotes and backslashes."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        items = sorted(((str(k), v) for k, v in value.items()), key=lambda item: item[0])
        return "{" + ", ".join(f"{_as_judged(k)}: {_as_judged(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(_as_judged, value)) + "]"
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return _as_judged(str(value))


#: Parameters ADK fills itself, never from the model's arguments.
_INJECTED = frozenset({"tool_context", "input_stream"})


def effective_args(tool: Any, args: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The arguments a function tool's function will be called with — those it takes, its
    defaults for the ones left out — and the names in ``args`` it does not take (ADK drops
    them after the guardrail). Any other tool's arguments are what it gets."""
    func = getattr(tool, "func", None)
    if func is None:
        return args, []
    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):  # no signature to read: judged as given
        return args, []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return args, []
    taken = {name: p for name, p in parameters.items() if name not in _INJECTED}
    unknown = sorted(name for name in args if name not in taken)
    effective = {
        name: args[name] if name in args else p.default
        for name, p in taken.items()
        if name in args or p.default is not inspect.Parameter.empty
    }
    return effective, unknown


def _denied(tool_name: str, rule: str | None, error: str) -> dict[str, Any]:
    return {"status": "DENIED", "tool": tool_name, "rule": rule, "error": error}


@dataclass
class Guardrail:
    """Evaluates tool calls for one ADK app. ``project_id``: the project whose rules apply
    (default: the app's name); ``agent_id``: whose allow-once grants it may use."""

    client: AsyncMemstream
    project_id: str | None = None
    app_as_project: bool = True
    agent_id: str | None = None
    fail_open: bool = False
    describe: Callable[[str, dict[str, Any]], str] = field(default=command_of)

    async def check(self, tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, Any] | None:
        """None to let the call of ``tool`` (an ADK ``BaseTool``: its ``name`` is what rules
        are for) run, else what the model receives instead of the tool's result."""
        if reads_memory_only(tool):
            return None
        tool_name: str = tool.name
        judged, unknown = effective_args(tool, args)
        if unknown:
            log.warning("%s called with arguments it does not take (%s): denied", tool_name, ", ".join(unknown))
            why = f"{tool_name} takes no argument named {', '.join(map(repr, unknown))}, so it was not run"
            return _denied(tool_name, None, why)
        session = tool_context.session
        project = self.project_id or (session.app_name if self.app_as_project else None)
        command = self.describe(tool_name, judged)
        if len(command) > MAX_COMMAND_CHARS:
            log.warning("%s's command has %d characters, more than are judged: denied", tool_name, len(command))
            why = f"the command has {len(command)} characters, more than the {MAX_COMMAND_CHARS} that are judged"
            return _denied(tool_name, None, f"{why}, so {tool_name} was not run")
        try:
            verdict = await self.client.permissions.evaluate(
                session_id=session.id,
                tool=tool_name,
                command=command,
                project_id=project,
                agent_id=self.agent_id,
            )
        except Exception as exc:  # anything but a verdict denies (fail_open: only "unreachable")
            return self._failed(tool_name, exc)
        decision = verdict.decision
        if decision == "ALLOW":
            return None
        rule = str(verdict.rule_id) if verdict.rule_id else verdict.tier
        if decision == "BLOCK":
            return _denied(tool_name, rule, f"blocked: {verdict.reason}")
        if decision != "PENDING":
            log.error("the permission service answered %r for %s: denied", decision, tool_name)
            return _denied(tool_name, rule, f"the permission service answered {decision!r}, so {tool_name} was not run")
        hint = f"{tool_name} wants to run `{command[:200]}`; an operator can allow it once: {verdict.reason}"
        try:
            tool_context.request_confirmation(hint=hint, payload={"tool": tool_name, "command": command})
        except ValueError:  # not inside a tool call (no function call id): nothing to confirm
            pass
        return {
            "status": "PENDING",
            "tool": tool_name,
            "rule": rule,
            "error": f"approval pending: {verdict.reason}; it runs once an operator allows it",
        }

    def _failed(self, tool_name: str, exc: Exception) -> dict[str, Any] | None:
        """What a call gets when no verdict came back: it runs only when the service could not
        be reached and ``fail_open`` is set; otherwise it is denied, saying why."""
        if service_unreachable(exc):
            if self.fail_open:
                log.warning("permission service unavailable, %s runs (fail_open): %s", tool_name, exc)
                return None
            log.warning("permission service unavailable, %s denied: %s", tool_name, exc)
            return _denied(
                tool_name, None, f"the permission service is unavailable, so {tool_name} was not run ({exc})"
            )
        if isinstance(exc, APIStatusError) and 400 <= exc.status_code < 500:
            log.warning("the permission service refused to judge %s, denied: %s", tool_name, exc)
            why = f"the permission service refused to judge this call, so {tool_name} was not run ({exc})"
            return _denied(tool_name, None, why)
        if isinstance(exc, MemstreamError):
            log.error("no verdict for %s, denied: %s", tool_name, exc)
        else:  # a defect on this side (arguments the SDK refused, a bug): loud, and still denied
            log.exception("no verdict for %s, denied", tool_name)
        return _denied(tool_name, None, f"no verdict from the permission service, so {tool_name} was not run ({exc})")


def before_tool_callback(
    client: AsyncMemstream,
    *,
    project_id: str | None = None,
    agent_id: str | None = None,
    fail_open: bool = False,
) -> Callable[..., Any]:
    """A ``before_tool_callback`` for ``LlmAgent(before_tool_callback=...)`` (ADK calls it by
    keyword: ``tool``, ``args``, ``tool_context``). In a list of callbacks, put it last."""
    guard = Guardrail(client, project_id=project_id, agent_id=agent_id, fail_open=fail_open)

    async def before_tool_callback(tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, Any] | None:
        return await guard.check(tool, args, tool_context)

    return before_tool_callback
