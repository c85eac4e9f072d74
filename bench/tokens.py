"""Tiered memory vs naive context stuffing: ``python -m bench.tokens [--budget N]``.

Replays ``bench.conversation`` (45 turns, 3 sessions, heavy tool output) turn by turn
through ``POST /v1/turns`` on a private embedded stack with the long-term memory worker,
and before every user turn — the moment an agent builds its prompt — measures two prompts,
both counted with the gateway's tokenizer (``memstream.tokens.TokenCounter``):

- ``naive``: the whole history so far (every earlier turn of every session, as
  ``role: content`` lines) plus the new user message;
- ``tiered``: ``GET /v1/context`` for the new message within ``--budget`` tokens (long-term
  facts, the session's rolling summary, recent turns, relevant memories) plus the new
  user message.

Before each context call it waits for the pipeline to settle (the last posted turn is in
its session's buffer and nothing is waiting to be folded into the summary; the user's
current facts have not changed for ``--settle-s``), so the figures describe the steady
state, not ingestion lag; waits that hit ``--wait-cap-s`` are counted in ``pipeline``.

Reports the per-turn series (with the context's tokens per section), the active prompt
at the last user turn (turn 45), the cumulative prompt tokens over all user turns, and,
for every rule of ``RULES``, whether the final context still holds it and in which
section (a needle found only in a recent tool log is luck, not memory) and whether a
current fact holds it (false: it was never extracted; true but not in the prompt: the
budget packed it out). The seed's figures are included for reference: their
conversation was several times bigger, so compare the percentages, not the absolute
tokens.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from agents_gateway.retrieval.context import TITLES
from bench.conversation import PROJECT, RULES, SESSIONS, Turn, build_conversation
from memstream.settings import Settings
from memstream.tokens import TokenCounter
from ops.stack.session import issue_key, stack_session

AGENT = "coding-agent"
USER = "dev-alice"
POLL_S = 0.1

#: The seed's internal benchmark (seeds/002: AlloyDB + Memorystore for Valkey).
SEED = {
    "source": "seed 002: 45+ turn development conversation with heavy tool-output logs",
    "active_prompt": {"turn": 45, "naive": 747_033, "tiered": 83_262, "smaller_pct": 88.9},
    "cumulative": {"naive": 17_900_000, "tiered": 4_090_000, "saved_pct": 72.0},
    "note": "As published; 4.09 M / 17.9 M alone would be 77.2 % saved (their 72 % may count more than "
    "prompt tokens). Their conversation was bigger: compare percentages, not absolute tokens.",
}


@dataclass(frozen=True)
class Point:
    turn: int
    session: int
    naive: int
    tiered: int
    #: Tokens per section of the context (facts, summary, recent, relevant).
    sections: dict[str, int]


@dataclass(frozen=True)
class Wait:
    seconds: float
    capped: bool


def _pct(before: int, after: int) -> float:
    return round(100 * (1 - after / before), 1) if before else 0.0


def post_turn(client: httpx.Client, turn: Turn, *, session_id: str) -> str:
    """Posts one turn; returns its event id."""
    event_id = str(uuid.uuid4())
    body: dict[str, Any] = {
        "event_id": event_id,
        "agent_id": AGENT,
        "user_id": USER,
        "project_id": PROJECT,
        "session_id": session_id,
        "role": turn.role,
        "content": turn.content,
    }
    if turn.tool_name:
        body |= {"tool_name": turn.tool_name, "tool_status": turn.tool_status}
    for attempt in range(20):
        response = client.post(
            "/v1/turns", content=orjson.dumps({"turns": [body]}), headers={"content-type": "application/json"}
        )
        if response.status_code == 202:
            return event_id
        if response.status_code not in (429, 503):
            raise RuntimeError(f"POST /v1/turns -> {response.status_code}: {response.text}")
        time.sleep(float(response.headers.get("retry-after", 0.1 * (attempt + 1))))
    raise RuntimeError("the gateway kept answering 503")


def _get(client: httpx.Client, path: str, **params: Any) -> Any:
    response = client.get(path, params=params)
    response.raise_for_status()
    return response.json()


def current_facts(client: httpx.Client) -> list[dict[str, Any]]:
    facts: list[dict[str, Any]] = _get(client, "/v1/entities", user_id=USER, all="true")["facts"]
    return facts


def settle(client: httpx.Client, *, session_id: str, event_id: str, settle_s: float, cap_s: float) -> Wait:
    """Until ``event_id`` is in its session's window with nothing pending, and the user's
    current facts have not changed for ``settle_s`` (a supersede changes the ids, not the count)."""
    started = time.monotonic()
    deadline = started + cap_s
    while time.monotonic() < deadline:
        buffer = _get(client, f"/v1/sessions/{session_id}/buffer", user_id=USER)
        if not buffer["pending"] and any(t["event_id"] == event_id for t in buffer["turns"]):
            break
        time.sleep(POLL_S)
    seen: list[str] | None = None
    stable_since = time.monotonic()
    while True:
        now = time.monotonic()
        if now >= deadline:
            return Wait(round(now - started, 2), capped=True)
        ids = sorted(f["fact_id"] for f in current_facts(client))
        if ids != seen:
            seen, stable_since = ids, now
        elif now - stable_since >= settle_s:
            return Wait(round(now - started, 2), capped=False)
        time.sleep(POLL_S)


def sections_of(prompt: str) -> dict[str, str]:
    """The context's text per section (``header``, then the names of ``TITLES``)."""
    names = {title: name for name, title in TITLES.items()}
    out: dict[str, list[str]] = {}
    current = "header"
    for line in prompt.splitlines():
        if line in names:
            current = names[line]
            continue
        out.setdefault(current, []).append(line)
    return {name: "\n".join(lines) for name, lines in out.items()}


def check_rules(prompt: str, facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    sections = {name: text.lower() for name, text in sections_of(prompt).items()}
    stored = " ".join(f["summary"] for f in facts).lower()
    return [
        {
            "needle": needle,
            "description": description,
            "kept": needle.lower() in prompt.lower(),
            "sections": [name for name, text in sections.items() if needle.lower() in text],
            "in_current_facts": needle.lower() in stored,
        }
        for needle, description in RULES
    ]


def replay(
    client: httpx.Client, turns: list[Turn], *, run: str, budget: int, settle_s: float, cap_s: float
) -> dict[str, Any]:
    tokens = TokenCounter()
    sessions = {n: f"{run}-s{n}" for n in range(1, SESSIONS + 1)}
    history: list[str] = []
    series: list[Point] = []
    waits: list[Wait] = []
    last: tuple[str, str] | None = None  # (session id, event id) of the last posted turn
    context: dict[str, Any] = {}
    facts: list[dict[str, Any]] = []
    for turn in turns:
        session_id = sessions[turn.session]
        if turn.role == "user":
            if last is not None:
                waits.append(settle(client, session_id=last[0], event_id=last[1], settle_s=settle_s, cap_s=cap_s))
            message = tokens.count(turn.content)
            context = _get(
                client,
                "/v1/context",
                user_id=USER,
                session_id=session_id,
                project_id=PROJECT,
                query=turn.content,
                budget=budget,
            )
            facts = current_facts(client)  # what long-term memory held when the prompt was built
            naive = tokens.count("\n".join(history)) + message
            parts = {s["name"]: int(s["tokens"]) for s in context["sections"]}
            series.append(Point(turn.number, turn.session, naive, int(context["tokens"]) + message, parts))
        last = (session_id, post_turn(client, turn, session_id=session_id))
        history.append(f"{turn.role}: {turn.content}")

    rules = check_rules(context["prompt"], facts)
    final, naive_total, tiered_total = series[-1], sum(p.naive for p in series), sum(p.tiered for p in series)
    return {
        "series": [asdict(p) for p in series],
        "active_prompt": {
            "turn": final.turn,
            "naive": final.naive,
            "tiered": final.tiered,
            "smaller_pct": _pct(final.naive, final.tiered),
        },
        "cumulative": {
            "user_turns": len(series),
            "naive": naive_total,
            "tiered": tiered_total,
            "saved_pct": _pct(naive_total, tiered_total),
        },
        "rules": rules,
        "all_rules_kept": all(r["kept"] for r in rules),
        "final_context": {
            "tokens": context["tokens"],
            "sections": context["sections"],
            "gateway_naive_tokens": context["naive_tokens"],
            "tokenizer": context["tokenizer"],
            "prompt": context["prompt"],
        },
        "current_facts": [
            {"scope": f["scope"], "entity": f["entity"], "version": f["version"], "summary": f["summary"]}
            for f in facts
        ],
        "pipeline": {
            "waits": len(waits),
            "mean_wait_s": round(sum(w.seconds for w in waits) / len(waits), 2) if waits else 0.0,
            "max_wait_s": max((w.seconds for w in waits), default=0.0),
            "capped_waits": sum(w.capped for w in waits),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tokens", description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=4000, help="tokens GET /v1/context may use")
    parser.add_argument("--settle-s", type=float, default=1.0, help="facts unchanged this long = caught up")
    parser.add_argument("--wait-cap-s", type=float, default=20.0, help="give up waiting for the pipeline after")
    parser.add_argument("--show-prompt", action="store_true", help="include the final context's prompt")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    turns = build_conversation()
    run = f"bench-tokens-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="memstream-bench-tokens-") as tmp:
        with stack_session(Settings(data_dir=Path(tmp)), memory=True) as stack:
            key = issue_key(
                stack.settings, tenant_id=run, scopes=["ingest", "read"], name="bench.tokens", rate_limit_per_s=1e6
            )
            with httpx.Client(
                base_url=stack.gateway_url, timeout=60, headers={"authorization": f"Bearer {key}"}
            ) as client:
                measured = replay(
                    client, turns, run=run, budget=args.budget, settle_s=args.settle_s, cap_s=args.wait_cap_s
                )
                workers = client.get("/readyz/workers").json()
    if not args.show_prompt:
        del measured["final_context"]["prompt"]
    result = {
        "benchmark": "tokens",
        "conversation": {
            "turns": len(turns),
            "sessions": SESSIONS,
            "user_turns": sum(t.role == "user" for t in turns),
            "tool_turns": sum(t.role == "tool" for t in turns),
            "tokens": TokenCounter().count("\n".join(f"{t.role}: {t.content}" for t in turns)),
        },
        "budget": args.budget,
        "tokenizer": TokenCounter.name,
        "memory_models": workers.get("roles", {}).get("memory", {}).get("detail"),
        **measured,
        "seed_reference": SEED,
    }
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
