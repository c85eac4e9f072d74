"""The permission engine's limits (security finding A): patterns too costly to match are
refused when stored, rules per tool and per tenant are bounded, matching runs off the event
loop within a time budget, and an evaluation that runs out of it is BLOCKED (fails closed)."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn
from fastapi import FastAPI

from agents_gateway.state import GatewayState
from ops.stack.process import free_port
from tests.fixtures.stack import RunningStack, client_for, eventually

#: The attacker's rule, ten times over, then one 8 KiB command: 5.4 s on the event loop before.
ATTACK_PATTERN = r"[\s\S]{0,1000}[\s\S]{0,1000}[\s\S]{0,1000}x"
#: The costliest rules still accepted: ~4,800 RE2 instructions each (the limit is 5,000), and
#: tens of ms per 8 KiB command of a and b, where RE2's DFA gives up and its NFA does the work.
HEAVY_PATTERN = r"(?:a[\s\S]{0,100}){6}x"
#: A command that makes the heavy rules slow, and matches none of them.
HEAVY_COMMAND = "".join(random.Random(7).choices("ab", k=8192))


@contextmanager
def settings_of(app: FastAPI, **values: object) -> Iterator[None]:
    """The in-process gateway with some settings changed, for the duration of a test."""
    state: GatewayState = app.state.gateway
    saved = state.settings
    state.settings = saved.model_copy(update=values)
    try:
        yield
    finally:
        state.settings = saved


async def add_rules(gateway: httpx.AsyncClient, patterns: list[str], **rule: object) -> list[httpx.Response]:
    return [
        await gateway.post("/v1/permissions/rules", json={"tool": "shell", "effect": "BLOCK", "pattern": p, **rule})
        for p in patterns
    ]


async def evaluate_while_probing(app: FastAPI, api_key: str, command: str) -> tuple[httpx.Response, float, list[float]]:
    """One evaluation over real HTTP (uvicorn, on this test's event loop) while another
    thread asks ``/healthz`` every 10 ms: the evaluation's response, how long it took, and
    every ``/healthz`` latency measured meanwhile. A blocked event loop shows as latency."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning", access_log=False)
    )
    serving = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, timeout_s=10, interval_s=0.01)
    base = f"http://127.0.0.1:{port}"
    evaluated = threading.Event()
    latencies: list[float] = []

    def probe() -> None:
        with httpx.Client(base_url=base, timeout=30) as client:
            while not evaluated.is_set():
                started = time.perf_counter()
                assert client.get("/healthz").status_code == 200
                latencies.append(time.perf_counter() - started)
                time.sleep(0.01)

    def evaluate() -> tuple[httpx.Response, float]:
        with httpx.Client(base_url=base, headers={"authorization": f"Bearer {api_key}"}, timeout=60) as client:
            started = time.perf_counter()
            response = client.post(
                "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "shell", "command": command}
            )
            return response, time.perf_counter() - started

    try:
        probing = asyncio.ensure_future(asyncio.to_thread(probe))
        await asyncio.sleep(0.05)
        response, took = await asyncio.to_thread(evaluate)
        evaluated.set()
        await probing
    finally:
        evaluated.set()
        server.should_exit = True
        await serving
    return response, took, latencies


async def test_the_attackers_reproduction_is_refused_and_does_not_stall_the_gateway(
    stack: RunningStack, gateway_app: FastAPI, tenant: str
) -> None:
    api_key = stack.key(tenant)
    async with client_for(gateway_app, api_key) as gateway:
        refused = await add_rules(gateway, [ATTACK_PATTERN] * 10)
        assert [r.status_code for r in refused] == [422] * 10
        error = refused[0].json()["error"]
        assert error["code"] == "invalid_pattern"
        assert "{0,1000}" in error["message"] and "100" in error["message"], error
        rules = (await gateway.get("/v1/permissions/rules", params={"tool": "shell"})).json()["rules"]
        assert rules == []
    response, took, latencies = await evaluate_while_probing(gateway_app, api_key, "a" * 8192)
    assert response.status_code == 200 and response.json()["decision"] == "PENDING"
    assert took < 1.0, f"the evaluation took {took:.2f} s"
    assert latencies and max(latencies) < 1.0, f"/healthz waited {max(latencies):.2f} s"


async def test_the_costliest_accepted_rules_finish_within_the_budget_off_the_event_loop(
    stack: RunningStack, gateway_app: FastAPI, tenant: str
) -> None:
    """50 rules (the default limit per tool) at the program-size limit, and a command that
    makes each search slow: 2-5 s of matching in all. The evaluation stops at its budget
    (0.25 s by default) and BLOCKs, and /healthz answers promptly all the while."""
    api_key = stack.key(tenant)
    async with client_for(gateway_app, api_key) as gateway:
        created = await add_rules(gateway, [f"{HEAVY_PATTERN}{i:02d}" for i in range(50)])
        assert [r.status_code for r in created] == [201] * 50, created[-1].text
        one_too_many = await add_rules(gateway, [f"{HEAVY_PATTERN}50"])
        assert one_too_many[0].status_code == 409, one_too_many[0].text
        assert one_too_many[0].json()["error"]["code"] == "rule_limit"
        # Another project's scope has room: the limit is per tool and scope.
        assert (await add_rules(gateway, [HEAVY_PATTERN], project_id="CloudRetail"))[0].status_code == 201
    budget = stack.settings.permission_eval_budget_s
    response, took, latencies = await evaluate_while_probing(gateway_app, api_key, HEAVY_COMMAND)
    assert response.status_code == 200, response.text
    verdict = response.json()
    assert (verdict["decision"], verdict["tier"]) == ("BLOCK", "budget_exceeded"), verdict
    assert "budget" in verdict["reason"] and "of 50 searches" in verdict["reason"], verdict
    # The budget plus at most one search at the limit (~65 ms), with room for a slow machine.
    assert took < budget + 1.0, f"the evaluation took {took:.2f} s"
    assert latencies and max(latencies) < 1.0, f"/healthz waited {max(latencies):.2f} s"


async def test_an_evaluation_over_its_budget_fails_closed_and_is_audited_and_counted(
    stack: RunningStack, gateway_app: FastAPI, gateway: httpx.AsyncClient, tenant: str
) -> None:
    cheap = (await add_rules(gateway, ["^ab"], effect="ALLOW", position=-1))[0].json()["rule_id"]
    await add_rules(gateway, [f"{HEAVY_PATTERN}{i}" for i in range(5)])
    # 50 ms: a heavy search takes ~100 ms, while the cheap rule's whole path (the command's
    # analysis included, ~1 ms) fits many times over even on a loaded machine (with a 1 ms
    # budget the analysis alone sometimes used it up, and the ALLOW below became a BLOCK).
    with settings_of(gateway_app, permission_eval_budget_s=0.05):
        body = {"session_id": "s1", "tool": "shell", "command": "b" + HEAVY_COMMAND[:8000]}
        started = time.perf_counter()
        blocked = (await gateway.post("/v1/permissions/evaluate", json=body)).json()
        took = time.perf_counter() - started
        # A rule that decides before the budget runs out still decides.
        body["command"] = "ab" + HEAVY_COMMAND[:8000]
        allowed = (await gateway.post("/v1/permissions/evaluate", json=body)).json()
    assert (blocked["decision"], blocked["tier"], blocked["rule_id"]) == ("BLOCK", "budget_exceeded", None)
    assert "50 ms budget" in blocked["reason"] and "fails closed" in blocked["reason"], blocked
    assert took < 1.0, f"the evaluation took {took:.2f} s: it should stop after one or two searches"
    assert (allowed["decision"], allowed["rule_id"]) == ("ALLOW", cheap)
    with stack.db(tenant) as conn:
        audited = conn.execute(
            "SELECT detail->>'decision', detail->>'tier' FROM audit_log WHERE action = 'permission.decision'"
            " ORDER BY seq"
        ).fetchall()
    assert audited == [("BLOCK", "budget_exceeded"), ("ALLOW", "global")]
    scraped = (await gateway.get("/metrics")).text
    assert 'memstream_permission_decisions_total{decision="BLOCK",tier="budget_exceeded"}' in scraped


async def test_more_rules_than_the_limits_allow_fail_closed(gateway_app: FastAPI, gateway: httpx.AsyncClient) -> None:
    """Rules stored before a limit was lowered are not silently skipped: too many to check
    is a BLOCK, like a budget exceeded."""
    await add_rules(gateway, ["^one", "^two", "^three"])
    with settings_of(gateway_app, permission_max_rules_per_tool=1):
        verdict = (
            await gateway.post("/v1/permissions/evaluate", json={"session_id": "s", "tool": "shell", "command": "ls"})
        ).json()
    assert (verdict["decision"], verdict["tier"]) == ("BLOCK", "budget_exceeded"), verdict
    assert "more than 2 rules" in verdict["reason"]


async def test_rules_per_tool_and_per_tenant_are_limited(gateway_app: FastAPI, gateway: httpx.AsyncClient) -> None:
    with settings_of(gateway_app, permission_max_rules_per_tool=3, permission_max_rules_per_tenant=5):
        assert [r.status_code for r in await add_rules(gateway, ["^a", "^b", "^c", "^d"])] == [201, 201, 201, 409]
        project = await add_rules(gateway, ["^a", "^b", "^c"], project_id="CloudRetail")
        assert [r.status_code for r in project] == [201, 201, 409]
        assert "the tenant already has 5 rules" in project[2].json()["error"]["message"]
        other_tool = await add_rules(gateway, ["^x"], tool="git")
        assert other_tool[0].status_code == 409 and other_tool[0].json()["error"]["code"] == "rule_limit"
        first = project[0].json()["rule_id"]
        assert (await gateway.delete(f"/v1/permissions/rules/{first}")).status_code == 204
        assert (await add_rules(gateway, ["^x"], tool="git"))[0].status_code == 201
        rules = (await gateway.get("/v1/permissions/rules")).json()["rules"]
    assert len(rules) == 5


async def test_concurrent_additions_cannot_exceed_the_limit(gateway_app: FastAPI, gateway: httpx.AsyncClient) -> None:
    with settings_of(gateway_app, permission_max_rules_per_tool=3):
        responses = await asyncio.gather(
            *(
                gateway.post("/v1/permissions/rules", json={"tool": "make", "effect": "BLOCK", "pattern": f"^t{i}"})
                for i in range(10)
            )
        )
    assert sorted(r.status_code for r in responses) == [201] * 3 + [409] * 7
