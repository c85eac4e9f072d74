"""The tenant's users, as the reader may see them: for search-as-you-type and a user picker.

A user is listed when the reader can see some memory of theirs — a live episode (the running
totals ``episode_counts``, migration 0009), a current fact, or a skill with an outcome — all
under row-level security, so an agent-bound reader never learns of a user that only another
agent's private memory holds, and its counts are of what it may see. Users come in id order,
a page at a time (keyset on the id); each source is read in that order through its index and
stops at the page's size, so a page costs the same at any depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

#: The escape character of the patterns below (``ESCAPE '\'``).
_ESCAPE = "\\"

_USERS = """
WITH found AS (
    (SELECT c.user_id FROM episode_counts c
      WHERE c.tenant_id = %(tenant)s AND c.user_id > %(after)s AND c.user_id ILIKE %(pattern)s ESCAPE '\\'
        AND c.episodes > 0
      GROUP BY c.user_id ORDER BY c.user_id LIMIT %(limit)s)
    UNION
    (SELECT f.user_id FROM facts f
      WHERE f.tenant_id = %(tenant)s AND f.valid_to IS NULL AND (f.expires_at IS NULL OR f.expires_at > now())
        AND f.user_id > %(after)s AND f.user_id ILIKE %(pattern)s ESCAPE '\\'
      GROUP BY f.user_id ORDER BY f.user_id LIMIT %(limit)s)
    UNION
    (SELECT k.user_id FROM skills k
      WHERE k.tenant_id = %(tenant)s AND k.user_id > %(after)s AND k.user_id ILIKE %(pattern)s ESCAPE '\\'
        AND EXISTS (SELECT 1 FROM skill_runs r WHERE r.tenant_id = k.tenant_id AND r.skill_id = k.skill_id)
      GROUP BY k.user_id ORDER BY k.user_id LIMIT %(limit)s)
)
SELECT f.user_id,
       (SELECT coalesce(sum(c.episodes), 0) FROM episode_counts c
         WHERE c.tenant_id = %(tenant)s AND c.user_id = f.user_id) AS episodes,
       (SELECT max(e.created_at) FROM episodes e
         WHERE e.tenant_id = %(tenant)s AND e.user_id = f.user_id
           AND (e.expires_at IS NULL OR e.expires_at > now())) AS last_seen
FROM found f ORDER BY f.user_id LIMIT %(limit)s
"""


@dataclass(frozen=True)
class UserSummary:
    user_id: str
    #: Live (not archived) episodes of the user the reader may see.
    episodes: int
    #: The event time of the newest episode of the user the reader may see (None: facts or
    #: skills only).
    last_seen: datetime | None


def contains_pattern(text: str | None) -> str:
    """An ILIKE pattern that matches values containing ``text`` as it is written: ``%``, ``_``
    and the escape character itself stand for themselves. No text matches everything."""
    if not text:
        return "%"
    escaped = "".join(_ESCAPE + c if c in ("%", "_", _ESCAPE) else c for c in text)
    return f"%{escaped}%"


async def list_users(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, *, contains: str | None, after: str | None, limit: int
) -> list[UserSummary]:
    """Up to ``limit`` users of the tenant in id order, strictly after ``after``, whose id
    contains ``contains`` (case-insensitively), with their counts as the current reader sees them."""
    params = {"tenant": tenant_id, "after": after or "", "pattern": contains_pattern(contains), "limit": limit}
    cur = await conn.execute(_USERS, params)
    return [UserSummary(str(row[0]), int(row[1]), row[2]) for row in await cur.fetchall()]
