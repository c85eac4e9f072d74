"""The tool-permission engine, in the seed's three tiers, failing closed.

1. an "allow once" grant for exactly this command in this session (Redis, single use);
2. the project's rules, in order; 3. the tenant's global rules, in order — the first
ALLOW or BLOCK pattern that matches decides;
otherwise PENDING: a human must confirm. Read-only memory tools are pre-approved.

Patterns are RE2 (linear-time matching, no backtracking), validated when stored, and
commands are capped in length, so a hostile pattern or command cannot stall a worker.
Every decision is audited with the rule (or grant) that made it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import psycopg
import re2
import redis.asyncio as aioredis

from sinks.postgres.audit import append_audit
from sinks.postgres.rules import rules_for
from sinks.redis.grants import command_hash, use_grant

Decision = Literal["ALLOW", "BLOCK", "PENDING"]
Tier = Literal["preapproved", "allow_once", "project", "global", "none"]

MAX_PATTERN_CHARS = 512
MAX_COMMAND_CHARS = 8192
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 8 << 20  # a pattern that needs more is refused when stored
_RE2_OPTIONS.log_errors = False


class PatternError(ValueError):
    """A rule pattern that RE2 cannot (or will not) compile."""


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any:
    """Compile (and cache) an RE2 pattern; PatternError says what is wrong with it."""
    if not pattern or len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"a pattern has 1-{MAX_PATTERN_CHARS} characters")
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(f"not a valid RE2 pattern: {reason}") from exc


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    tier: Tier
    reason: str
    rule_id: uuid.UUID | None = None
    grant_id: uuid.UUID | None = None


async def decide(
    conn: psycopg.AsyncConnection[Any],
    client: aioredis.Redis,
    *,
    tenant_id: str,
    session_id: str,
    project_id: str | None,
    tool: str,
    command: str,
    preapproved: tuple[str, ...],
) -> Verdict:
    if tool in preapproved:
        return Verdict("ALLOW", "preapproved", f"{tool} only reads memory")
    grant = await use_grant(client, tenant_id=tenant_id, session_id=session_id, tool=tool, command=command)
    if grant is not None:
        return Verdict("ALLOW", "allow_once", "a single-use grant for this command", grant_id=grant)
    for rule in await rules_for(conn, tool=tool, project_id=project_id):
        try:
            matched = compile_pattern(rule.pattern).search(command) is not None
        except PatternError:
            continue  # stored before validation tightened: never matches, never crashes
        if matched:
            tier: Tier = "project" if rule.project_id is not None else "global"
            where = f"project {rule.project_id}" if rule.project_id else "global"
            return Verdict(rule.effect, tier, f"{where} rule /{rule.pattern}/", rule_id=rule.rule_id)
    return Verdict("PENDING", "none", "no rule matches: a human must confirm")


async def evaluate(
    conn: psycopg.AsyncConnection[Any],
    client: aioredis.Redis,
    *,
    tenant_id: str,
    actor: str,
    session_id: str,
    project_id: str | None,
    tool: str,
    command: str,
    preapproved: tuple[str, ...],
) -> Verdict:
    """Decide, and record the decision in the audit log (in the caller's transaction)."""
    verdict = await decide(
        conn, client, tenant_id=tenant_id, session_id=session_id, project_id=project_id,
        tool=tool, command=command, preapproved=preapproved,
    )  # fmt: skip
    await append_audit(
        conn,
        tenant_id=tenant_id,
        actor=actor,
        action="permission.decision",
        subject=session_id,
        detail={
            "tool": tool,
            "command": command,
            "command_sha256": command_hash(tool, command),
            "project_id": project_id,
            "decision": verdict.decision,
            "tier": verdict.tier,
            "rule_id": str(verdict.rule_id) if verdict.rule_id else None,
            "grant_id": str(verdict.grant_id) if verdict.grant_id else None,
        },
    )
    return verdict
