"""Every Redis key memstream uses, built in one place from an unambiguous encoding.

A key is ``ms:<kind>:{<tag parts>}:<other parts>``. Each part is escaped before it is
joined (``%`` -> ``%25``, ``:`` -> ``%3A``, ``{`` -> ``%7B``, ``}`` -> ``%7D``, and any
control character or space as its UTF-8 ``%XX`` bytes), so no part can contain the
separator or a brace: two different tuples of parts can never give the same key, and the
Redis Cluster hash tag (the text between the first ``{`` and the next ``}``) is exactly
the encoded tag parts. Identifiers are already restricted (``schemas/turns.py``); the
encoding does not rely on that.

The hash tag keeps the keys of one session buffer (a user's turns in a session: the buffer,
its trim mark, rolling summary and compaction flag) on one Redis Cluster slot, so one Lua
script can touch them atomically.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

PREFIX = "ms"
_ESCAPED = frozenset("%:{}")
#: What a printable part may still hold that must be escaped (every other space is not
#: printable): one search in C, where a test per character was about 30 µs of a buffer's read.
_PRINTABLE_ESCAPED = re.compile(r"[%:{} ]")


def escape(part: str) -> str:
    """One key part with ``%``, ``:``, braces, spaces and control characters percent-encoded."""
    if part.isprintable() and not _PRINTABLE_ESCAPED.search(part):
        return part
    out: list[str] = []
    for ch in part:
        if ch in _ESCAPED or ch.isspace() or not ch.isprintable():
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        else:
            out.append(ch)
    return "".join(out)


def redis_key(kind: str, tag: Sequence[str], *rest: str) -> str:
    """``ms:<kind>:{<tag...>}[:<rest...>]``, every part escaped."""
    inner = ":".join(escape(p) for p in tag)
    tail = "".join(":" + escape(p) for p in rest)
    return f"{PREFIX}:{escape(kind)}:{{{inner}}}{tail}"


# --- session buffers (one slot per tenant + user + session) -------------------------------


#: The kinds of key one session buffer has (``SessionRef.keys`` in ``buffer.py``).
BUFFER_KINDS = ("buf", "bufmark", "bufsum", "bufreq")
_GLOB = str.maketrans({ch: "\\" + ch for ch in "*?[]\\"})


def user_buffers_pattern(tenant_id: str, user_id: str) -> str:
    """A SCAN pattern matching every buffer key of one user of a tenant, whatever the session."""
    tag = f"{escape(tenant_id)}:{escape(user_id)}:".translate(_GLOB)
    return f"{PREFIX}:buf*:{{{tag}*}}"


def buffer_key(tenant_id: str, user_id: str, session_id: str) -> str:
    return redis_key("buf", (tenant_id, user_id, session_id))


def trim_mark_key(tenant_id: str, user_id: str, session_id: str) -> str:
    return redis_key("bufmark", (tenant_id, user_id, session_id))


def summary_key(tenant_id: str, user_id: str, session_id: str) -> str:
    return redis_key("bufsum", (tenant_id, user_id, session_id))


def request_key(tenant_id: str, user_id: str, session_id: str) -> str:
    return redis_key("bufreq", (tenant_id, user_id, session_id))


# --- permissions, limits, workers ------------------------------------------------------------


def grant_key(tenant_id: str, session_id: str, grant_sha256: str) -> str:
    """An allow-once grant: ``grant_sha256`` hashes what else it is bound to — the project
    (or none), the agent (or any), the tool and the command (``sinks/redis/grants.py``)."""
    return redis_key("allow", (tenant_id, session_id), grant_sha256)


def event_claim_key(tenant_id: str, event_id: str) -> str:
    """Which turn an event id belongs to (``event_claims.py``)."""
    return redis_key("eid", (tenant_id, event_id))


def rate_limit_key(scope: str, subject: str) -> str:
    """A token bucket: ``scope`` is what is limited (``addr``), ``subject`` which one."""
    return redis_key("rl", (scope, subject))


def principal_bucket_keys(tenant_id: str, key_id: str) -> tuple[str, str]:
    """The buckets of an API key and of its tenant, on one Redis Cluster slot (the tenant's),
    so one script takes from both or from neither."""
    return redis_key("rl", ("tenant", tenant_id), "key", key_id), redis_key("rl", ("tenant", tenant_id))


def defect_key(app_id: str) -> str:
    """The code defect that stopped a worker of ``app_id`` (``streams/defects.py``)."""
    return redis_key("defect", (app_id,))


def workers_key(app_id: str) -> str:
    return redis_key("workers", (app_id,))


def partitions_key(app_id: str) -> str:
    return redis_key("workers", (app_id,), "partitions")
