"""The tenant the browser tests look at: the seed scenario of ``memstream demo`` (session 1),
then a later session that moves CloudRetail to another region (a fact with two versions), a
turn of hostile markup, and deploy outcomes (a skill and a lesson) — posted through the served
gateway and processed by the real workers, waited for until every view has something to show."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from ops.demo import PROJECT, SESSION_1
from tests.fixtures.stack import RunningStack

USER = "dana-ui"
#: The user whose memory holds the hostile turn (kept apart, so that the views' screenshots of
#: the main user read as a person would see them).
HOSTILE_USER = "mallory-ui"
AGENT = "demo-agent"
SESSION_ONE = "s1-planning"
SESSION_TWO = "s2-migration"
#: What the later session says: the region fact gets a second version.
MOVED = "We moved CloudRetail from asia-southeast1 to europe-west1."
#: A turn whose text is markup that would run if the page ever rendered it as HTML; the
#: sentence around it makes the extractor keep it as a fact too (the editor), so it reaches
#: the facts view and the context as well as the timeline and search.
HOSTILE = "<img src=x onerror=alert(1)> <script>alert(2)</script> I use Vim as my editor."
HOSTILE_TAG = "<svg onload=alert(3)>"
#: A turn the tests forget (nothing else depends on it).
FORGETTABLE = "Random thought: should I get a standing desk? Never mind."
DEPLOY_FEEDBACK = "the dist folder was not committed, so rsync shipped an empty build"
SEED_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Seeded:
    url: str
    tenant: str
    user: str
    #: The user whose memory holds the hostile turn.
    hostile_user: str
    #: ingest, read and admin, not bound to an agent.
    admin_key: str
    #: read only.
    read_key: str
    #: ingest and read, bound to the agent that wrote the memories.
    agent_key: str
    forgettable_id: str
    hostile_id: str
    #: When session 1 happened (the region moved a day later).
    start: datetime

    def keys(self) -> tuple[str, ...]:
        return (self.admin_key, self.read_key, self.agent_key)


def _turns(tenant: str, start: datetime) -> list[dict[str, Any]]:
    turns = [
        {
            "tenant_id": tenant, "agent_id": AGENT, "user_id": USER, "session_id": SESSION_ONE,
            "project_id": project, "role": role, "content": content,
            "event_time": (start + timedelta(minutes=i)).isoformat(),
            **({"tool_name": "kubectl", "tool_status": "success"} if role == "tool" else {}),
        }
        for i, (role, content, project) in enumerate(SESSION_1)
    ]  # fmt: skip
    later = start + timedelta(days=1)
    later_turns: list[tuple[str, str, str, list[str]]] = [
        (USER, "user", MOVED, []),
        (USER, "assistant", "Noted: CloudRetail now deploys to europe-west1.", []),
        (HOSTILE_USER, "user", HOSTILE, [HOSTILE_TAG]),
    ]
    for i, (user, role, content, tags) in enumerate(later_turns):
        turn: dict[str, Any] = {
            "tenant_id": tenant, "agent_id": AGENT, "user_id": user, "session_id": SESSION_TWO,
            "project_id": PROJECT, "role": role, "content": content, "tags": tags,
            "event_time": (later + timedelta(minutes=i)).isoformat(),
        }  # fmt: skip
        turns.append(turn)
    return turns


def _deploys(start: datetime) -> list[dict[str, Any]]:
    steps = ["build", "rsync dist/ to the servers", "restart"]
    return [
        {
            "agent_id": AGENT, "user_id": USER, "session_id": SESSION_TWO, "project_id": PROJECT,
            "skill": "deploy", "status": status, "steps": steps,
            "event_time": (start + timedelta(days=1, hours=hours)).isoformat(),
            **({"feedback": feedback} if feedback else {}),
        }
        for status, feedback, hours in (("success", None, 1), ("failure", DEPLOY_FEEDBACK, 2))
    ]  # fmt: skip


def _wait(what: str, check: Callable[[], object]) -> None:
    deadline = time.monotonic() + SEED_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"the seeded tenant never had {what} within {SEED_TIMEOUT_S:.0f} s")
        time.sleep(0.2)


def seed_tenant(stack: RunningStack, url: str) -> Seeded:
    tenant = f"t-ui-{uuid.uuid4().hex[:8]}"
    admin_key = stack.key(tenant)
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=3)
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {admin_key}"}, timeout=30) as client:
        turns = _turns(tenant, start)
        posted = client.post("/v1/turns", json={"turns": turns})
        assert posted.status_code == 202, posted.text
        ids = dict(zip((t["content"] for t in turns), posted.json()["event_ids"], strict=True))
        for body in _deploys(start):
            answer = client.post("/v1/tool-events", json=body)
            assert answer.status_code == 202, answer.text

        def facts(user: str = USER) -> dict[tuple[str, str], str]:
            found = client.get("/v1/entities", params={"user_id": user, "all": "true"}).json()["facts"]
            return {(f["scope"], f["entity"]): f["summary"] for f in found}

        def versions() -> int:
            history = client.get("/v1/entities/deployment region/history", params={"user_id": USER})
            return len(history.json()["facts"])

        def graph() -> bool:
            answer = client.get("/v1/graph/neighbors", params={"entity": PROJECT, "depth": 2, "user_id": USER}).json()
            return any(n["entity"] == "alloydb" for n in answer["neighbors"])

        def timeline() -> set[str]:
            answer = client.get("/v1/memories", params={"user_id": USER, "limit": 100}).json()
            return {m["memory_type"] for m in answer["memories"]}

        def skills() -> bool:
            found = client.get("/v1/skills", params={"user_id": USER}).json()["skills"]
            return any(s["name"] == "deploy" and s["attempts"] == 2 for s in found)

        wanted = {("global", "theme"), ("global", "language"), ("global", "database")}
        _wait("the global facts", lambda: wanted <= facts().keys())
        _wait("the hostile turn as a fact", lambda: ("global", "editor") in facts(HOSTILE_USER))
        _wait("the moved region", lambda: "europe-west1" in facts().get(("project", "deployment region"), ""))
        _wait("two versions of the region", lambda: versions() == 2)
        _wait("the graph to AlloyDB", graph)
        _wait("a lesson in the timeline", lambda: {"episodic", "procedural"} <= timeline())
        _wait("the deploy skill", skills)
    return Seeded(
        url=url,
        tenant=tenant,
        user=USER,
        hostile_user=HOSTILE_USER,
        admin_key=admin_key,
        read_key=stack.key(tenant, scopes=("read",)),
        agent_key=stack.key(tenant, scopes=("ingest", "read"), agent=AGENT),
        forgettable_id=ids[FORGETTABLE],
        hostile_id=ids[HOSTILE],
        start=start,
    )
