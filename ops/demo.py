"""``memstream demo``: the user's seed scenario, played against a running stack.

Session 1 states global preferences (dark mode, Python 3.11, PostgreSQL) and the
project rules of CloudRetail (FastAPI on AlloyDB, Valkey cache, 30 s tool timeouts,
a region), between noise turns. Session 2 — a new session id — searches for them.
Exits 1 if the hits do not contain every preference and every rule.
"""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from memstream.settings import Settings
from ops.stack.session import issue_key, stack_session, wait_ready
from ops.stack.state import with_running_stack

TENANT = "demo"
PROJECT = "CloudRetail"

SESSION_1: list[tuple[str, str, str | None]] = [
    ("user", "Hi! Before we start: I prefer dark mode in every editor and terminal I use.", None),
    ("assistant", "Got it, dark mode everywhere.", None),
    ("user", "I always write Python 3.11 and my default database is PostgreSQL.", None),
    ("assistant", "Noted: Python 3.11 and PostgreSQL by default.", None),
    ("user", "Unrelated, but the weather was lovely this morning, I went for a run.", None),
    ("assistant", "Sounds nice! Let me know when you want to get to work.", None),
    ("user", "Project rule for CloudRetail: the backend is FastAPI running on AlloyDB.", PROJECT),
    ("assistant", "Understood: CloudRetail's backend is FastAPI on AlloyDB.", PROJECT),
    ("user", "CloudRetail caches everything in Valkey; do not introduce another cache.", PROJECT),
    (
        "tool",
        "$ kubectl get pods -n cloudretail\napi-7d9f 1/1 Running\nworker-55c 1/1 Running",
        PROJECT,
    ),
    ("user", "In CloudRetail every tool call gets a 30 second timeout.", PROJECT),
    ("user", "CloudRetail is deployed only to the asia-southeast1 region.", PROJECT),
    ("assistant", "I'll keep 30 s tool timeouts and deploy to asia-southeast1 only.", PROJECT),
    ("user", "Random thought: should I get a standing desk? Never mind.", None),
    ("assistant", "Happy to compare standing desks later.", None),
]


@dataclass(frozen=True)
class Check:
    name: str
    query: str
    must_contain: tuple[str, ...]


CHECKS = (
    Check(
        "global preferences",
        "what are my preferences for editor theme, Python version and database?",
        ("dark mode", "Python 3.11", "PostgreSQL"),
    ),
    Check(
        "CloudRetail project rules",
        "CloudRetail rules: backend, database, cache, tool timeout and deployment region",
        # "30 s": the timeout rule in the user's words ("30 second") or in the assistant's
        # confirmation ("30 s tool timeouts"), whichever the current fact version holds.
        ("FastAPI", "AlloyDB", "Valkey", "30 s", "asia-southeast1"),
    ),
)


def _say(text: str = "") -> None:
    print(text, flush=True)  # the CLI's own output


def _search(client: httpx.Client, user: str, check: Check, k: int) -> list[dict[str, Any]]:
    response = client.get(
        "/v1/search",
        params={
            "tenant_id": TENANT,
            "user_id": user,
            "project_id": PROJECT,
            "q": check.query,
            "k": k,
        },
    )
    response.raise_for_status()
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


def _missing(hits: list[dict[str, Any]], check: Check) -> list[str]:
    text = " ".join(h["content"] for h in hits).lower()
    return [needle for needle in check.must_contain if needle.lower() not in text]


def play(client: httpx.Client, *, k: int = 5, timeout_s: float = 60.0) -> int:
    user = f"demo-user-{uuid.uuid4().hex[:6]}"
    session_1, session_2 = f"s1-{uuid.uuid4().hex[:6]}", f"s2-{uuid.uuid4().hex[:6]}"
    turns = [
        {
            "tenant_id": TENANT,
            "agent_id": "demo-agent",
            "user_id": user,
            "session_id": session_1,
            "project_id": project,
            "role": role,
            "content": content,
            **({"tool_name": "kubectl", "tool_status": "success"} if role == "tool" else {}),
        }
        for role, content, project in SESSION_1
    ]
    _say(f"== session 1 ({session_1}) of {user}: {len(turns)} turns in ==")
    for role, content, _ in SESSION_1:
        _say(f"  [{role:<9}] {content.splitlines()[0]}")
    response = client.post("/v1/turns", json={"turns": turns})
    if response.status_code != 202:
        _say(f"POST /v1/turns failed: {response.status_code} {response.text}")
        return 1

    deadline = time.monotonic() + timeout_s
    results: dict[str, list[dict[str, Any]]] = {}
    while True:
        results = {c.name: _search(client, user, c, k) for c in CHECKS}
        missing = {c.name: _missing(results[c.name], c) for c in CHECKS}
        if not any(missing.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.5)

    buffer = client.get(f"/v1/sessions/{session_1}/buffer", params={"user_id": user}).json()
    _say(f"\n== session 1 buffer: {len(buffer['turns'])} turns, {buffer['total_tokens']} tokens ==")
    for t in buffer["turns"]:
        _say(f"  [{t['role']:<9}] {t['content'].splitlines()[0]}")

    _say(f"\n== session 2 ({session_2}): searching long-term memory ==")
    for check in CHECKS:
        _say(f'\n"{check.query}"  (top {k})')
        for hit in results[check.name]:
            _say(f"  {hit['score']:.4f}  {hit['content'].splitlines()[0]}")
        absent = missing[check.name]
        _say(f"  -> {check.name}: {'all recalled' if not absent else 'MISSING ' + ', '.join(absent)}")
    _show_facts(client, user)
    _show_context(client, user, session_2)
    ok = not any(missing.values())
    _say("\nOK: session 2 recalls the preferences and the project rules" if ok else "\nFAILED")
    return 0 if ok else 1


def _show_facts(client: httpx.Client, user: str, *, timeout_s: float = 30.0) -> None:
    """Long-term memory: the scoped facts the memory worker extracted from session 1."""
    deadline = time.monotonic() + timeout_s
    facts: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        response = client.get("/v1/entities", params={"user_id": user, "project_id": PROJECT})
        facts = response.json().get("facts", []) if response.status_code == 200 else []
        if len(facts) >= 8:
            break
        time.sleep(0.5)
    _say(f"\n== session 2: long-term facts of {user} for {PROJECT} ({len(facts)}) ==")
    for f in facts:
        where = f"project {f['project_id']}" if f["scope"] == "project" else f["scope"]
        _say(f"  {where:<22} {f['entity']:<18} {f['category']:<10} {f['summary']}")
    if not facts:
        _say("  (none yet: is the long-term memory worker running?)")


def _show_context(client: httpx.Client, user: str, session: str) -> None:
    """What an agent in session 2 would put in its prompt (GET /v1/context)."""
    question = "my coding preferences and the backend and timeout rules I chose for CloudRetail last session"
    response = client.get(
        "/v1/context",
        params={"user_id": user, "session_id": session, "project_id": PROJECT, "query": question, "budget": 600},
    )
    if response.status_code != 200:
        _say(f"\nGET /v1/context failed: {response.status_code} {response.text}")
        return
    context = response.json()
    _say(f"\n== session 2: the context for '{question}' ==")
    _say(f"   sub-queries: {context['decomposition']['queries']}")
    for line in context["prompt"].splitlines():
        _say(f"  | {line}")
    _say(f"  {context['tokens']} tokens ({context['tokenizer']}); the whole history would be "
         f"{context['naive_tokens']} tokens")  # fmt: skip


def _client(url: str, api_key: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=30, headers={"authorization": f"Bearer {api_key}"})


def run_demo(settings: Settings, *, gateway: str | None, api_key: str | None = None) -> int:
    """Against ``gateway`` (with ``api_key``, or a demo key made with the running stack's owner
    role), else against the running `memstream up`, else against a private stack."""
    if gateway:
        wait_ready(gateway)
        key = api_key or _demo_key(with_running_stack(settings))
        with _client(gateway, key) as client:
            return play(client)
    with stack_session(settings) as stack:
        if stack.private:
            _say(f"(no running `memstream up` in {settings.data_dir}; started a private stack)")
        with _client(stack.gateway_url, api_key or _demo_key(stack.settings)) as client:
            return play(client)


def _demo_key(settings: Settings) -> str:
    return issue_key(settings, tenant_id=TENANT, scopes=["ingest", "read"], name="memstream demo")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run_demo(Settings(), gateway=None))
