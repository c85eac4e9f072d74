"""The knowledge graph from an agent's key: ``/v1/graph/neighbors`` without a ``user_id`` walks
every user of the tenant, which is a tenant-level key's view. A key bound to an agent must name
the user (422), and then sees that user's edges only, its own and shared ones."""

from __future__ import annotations

import uuid

from fastapi import FastAPI

from tests.fixtures.stack import RunningStack, client_for

#: (user, agent, shared, object) of an edge "acme -uses-> object".
EDGES = [
    ("alice", "coder", True, "postgres"),
    ("bob", "coder", True, "mongodb"),  # another user of the same agent
    ("bob", "billing", True, "stripe"),  # another user, another agent, shared
    ("alice", "reviewer", False, "oracle"),  # the same user, another agent's private edge
]


def seed_edges(stack: RunningStack, tenant: str) -> None:
    with stack.owner_db(tenant) as conn:
        for user, agent, shared, target in EDGES:
            conn.execute(
                "INSERT INTO edges (tenant_id, edge_id, user_id, agent_id, subject, predicate, object, fact_id,"
                " source_event_id, shared, valid_from) VALUES (%s, %s, %s, %s, 'acme', 'uses', %s, %s, %s, %s, now())",
                (tenant, uuid.uuid4(), user, agent, target, uuid.uuid4(), uuid.uuid4(), shared),
            )


async def test_an_agents_key_cannot_walk_every_users_graph(
    stack: RunningStack, gateway_app: FastAPI, tenant: str
) -> None:
    seed_edges(stack, tenant)
    coder = stack.key(tenant, agent="coder", scopes=("read",))
    walk = {"entity": "Acme", "depth": 2, "direction": "both"}
    async with client_for(gateway_app, coder) as attacker, client_for(gateway_app, stack.key(tenant)) as tenant_key:
        spanning = await attacker.get("/v1/graph/neighbors", params=walk)
        assert spanning.status_code == 422, spanning.text
        error = spanning.json()["error"]
        assert error["code"] == "invalid_request" and "user_id is required" in error["message"]
        assert error["details"][0]["loc"] == ["query", "user_id"]
        assert "mongodb" not in spanning.text and "stripe" not in spanning.text

        for blank in ("", " "):  # an empty id is no way around it
            assert (await attacker.get("/v1/graph/neighbors", params={**walk, "user_id": blank})).status_code == 422

        alice = await attacker.get("/v1/graph/neighbors", params={**walk, "user_id": "alice"})
        assert alice.status_code == 200
        assert {n["entity"] for n in alice.json()["neighbors"]} == {"postgres"}, "no other user's, no private edge"
        bob = await attacker.get("/v1/graph/neighbors", params={**walk, "user_id": "bob"})
        assert {n["entity"] for n in bob.json()["neighbors"]} == {"mongodb", "stripe"}

        # The tenant-level key keeps the tenant-wide walk (every agent's edges, private ones included).
        everyone = await tenant_key.get("/v1/graph/neighbors", params=walk)
        assert everyone.status_code == 200
        assert {n["entity"] for n in everyone.json()["neighbors"]} == {"postgres", "mongodb", "stripe", "oracle"}
