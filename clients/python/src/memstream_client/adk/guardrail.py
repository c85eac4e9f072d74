"""The permission guardrail: every tool call of an ADK agent is evaluated by memstream's
permission engine (``/v1/permissions/evaluate``) before it runs.

- ALLOW: the tool runs (the callback returns None).
- BLOCK: it does not; the model gets ``{"status": "DENIED", "tool", "rule", "error"}`` and can
  explain why.
- PENDING (no rule decided): it does not run; a confirmation is requested from the person
  (``tool_context.request_confirmation``) and the model is told that approval is pending.
  Once an operator grants it (``/v1/permissions/allow-once``), the same command runs once.
- memstream unreachable: denied (``fail_open=True`` lets the tool run instead).

memstream's own read-only memory tools (``search_archived_memory``) are pre-approved here
(tier 0), without a round trip.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memstream_client import AsyncMemstream
from memstream_client.errors import APIConnectionError, APIStatusError, MemstreamError

log = logging.getLogger(__name__)

#: Tools that only read the agent's own memory: allowed without asking (tier 0).
PREAPPROVED = frozenset({"search_archived_memory", "load_memory", "preload_memory"})


def command_of(tool_name: str, args: dict[str, Any]) -> str:
    """What a call asks for, as the permission engine matches it: a call with one argument, a
    string (a shell tool's command line), is that string; any other call is all its arguments,
    as sorted JSON — so a rule never sees one argument while the tool acts on another. A tool
    whose command is spread over several arguments can say how to read it (``describe=``)."""
    if len(args) == 1:
        [value] = args.values()
        if isinstance(value, str) and value.strip():
            return value
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str) if args else tool_name


@dataclass
class Guardrail:
    """Evaluates tool calls for one ADK app. ``project_id``: the project whose rules apply
    (default: the app's name); ``agent_id``: whose allow-once grants it may use."""

    client: AsyncMemstream
    project_id: str | None = None
    app_as_project: bool = True
    agent_id: str | None = None
    fail_open: bool = False
    preapproved: frozenset[str] = PREAPPROVED
    describe: Callable[[str, dict[str, Any]], str] = field(default=command_of)

    async def check(self, tool_name: str, args: dict[str, Any], tool_context: Any) -> dict[str, Any] | None:
        """None to let the call run, else what the model receives instead of the tool's result."""
        if tool_name in self.preapproved:
            return None
        session = tool_context.session
        project = self.project_id or (session.app_name if self.app_as_project else None)
        command = self.describe(tool_name, args)
        try:
            verdict = await self.client.permissions.evaluate(
                session_id=session.id,
                tool=tool_name,
                command=command[:8192],
                project_id=project,
                agent_id=self.agent_id,
            )
        except (APIConnectionError, APIStatusError, MemstreamError) as exc:
            if self.fail_open:
                log.warning("permission service unavailable, %s runs (fail_open): %s", tool_name, exc)
                return None
            log.warning("permission service unavailable, %s denied: %s", tool_name, exc)
            return {
                "status": "DENIED",
                "tool": tool_name,
                "rule": None,
                "error": f"the permission service is unavailable, so {tool_name} was not run ({exc})",
            }
        if verdict.decision == "ALLOW":
            return None
        rule = str(verdict.rule_id) if verdict.rule_id else verdict.tier
        if verdict.decision == "BLOCK":
            return {"status": "DENIED", "tool": tool_name, "rule": rule, "error": f"blocked: {verdict.reason}"}
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


def before_tool_callback(
    client: AsyncMemstream,
    *,
    project_id: str | None = None,
    agent_id: str | None = None,
    fail_open: bool = False,
) -> Callable[..., Any]:
    """A ``before_tool_callback`` for ``LlmAgent(before_tool_callback=...)`` (ADK calls it by
    keyword: ``tool``, ``args``, ``tool_context``)."""
    guard = Guardrail(client, project_id=project_id, agent_id=agent_id, fail_open=fail_open)

    async def before_tool_callback(tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, Any] | None:
        return await guard.check(tool.name, args, tool_context)

    return before_tool_callback
