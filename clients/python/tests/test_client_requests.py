"""What each method sends: method, path, query and body as the gateway reads them; and every
method of both clients reads its answer into its model."""

from __future__ import annotations

import inspect
import operator
import types
import typing
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pydantic
import pytest

from client_script import ok
from memstream_client import Turn
from memstream_client.resources import ENDPOINTS

TURN = {"agent_id": "a1", "user_id": "u1", "session_id": "s1", "role": "user", "content": "hello"}

#: An example call of every SDK method.
EXAMPLES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "whoami": ((), {}),
    "turns.publish": ((TURN,), {}),
    "sessions.buffer": (("s1",), {"user_id": "u1"}),
    "search": (("u1", "dark mode"), {}),
    "context.get": (("u1", "what theme?"), {"session_id": "s1"}),
    "entities.list": (("u1",), {}),
    "entities.history": (("theme",), {"user_id": "u1"}),
    "graph.neighbors": (("cloudretail",), {}),
    "skills.best": (("u1", "deploy"), {}),
    "skills.list": (("u1",), {}),
    "memories.list": (("u1",), {}),
    "memories.delete": ((uuid.UUID(int=9),), {}),
    "tool_events.record": (({"user_id": "u1", "session_id": "s1", "skill": "deploy", "status": "success"},), {}),
    "permissions.evaluate": ((), {"session_id": "s1", "tool": "shell", "command": "ls"}),
    "permissions.allow_once": ((), {"session_id": "s1", "tool": "shell", "command": "ls"}),
    "rules.create": ((), {"tool": "shell", "effect": "BLOCK", "pattern": "rm"}),
    "rules.list": ((), {}),
    "rules.delete": ((uuid.UUID(int=7),), {}),
    "users.list": ((), {}),
    "users.erase": (("u1",), {}),
    "users.consent": (("u1",), {}),
    "audit.list": ((), {}),
    "tenant.privacy.get": ((), {}),
    "tenant.privacy.set": ((), {"redact_email": True}),
    "tenant.retention.get": ((), {}),
    "tenant.retention.set": ((), {"max_age_days": 30}),
    "tenant.retention.preview": ((), {}),
    "tenant.ranking.get": ((), {}),
    "tenant.ranking.set": ((), {"text_weight": 0.5}),
    "tenant.text_search.get": ((), {}),
    "tenant.text_search.set": ((), {"config": "german"}),
}


def example(annotation: Any) -> Any:
    """A JSON value that fits ``annotation`` (a model: every field filled)."""
    if annotation is Any:
        return None
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return example(next(a for a in typing.get_args(annotation) if a is not type(None)))
    if origin is typing.Literal:
        return typing.get_args(annotation)[0]
    if origin is list:
        return [example(typing.get_args(annotation)[0])]
    if origin is dict:
        return {"key": example(typing.get_args(annotation)[1])}
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return {name: example(field.annotation) for name, field in annotation.model_fields.items()}
    return {
        str: "x",
        int: 1,
        float: 0.5,
        bool: True,
        uuid.UUID: str(uuid.UUID(int=1)),
        datetime: "2026-12-01T09:00:00Z",
    }[annotation]


def answer_of(name: str) -> httpx.Response:
    response = ENDPOINTS[name].operation.response
    return httpx.Response(204) if response is None else ok(example(response))


def expected_path(name: str) -> str:
    operation = ENDPOINTS[name].operation
    values = {"session_id": "s1", "name": "theme", "rule_id": str(uuid.UUID(int=7)), "user_id": "u1",
              "memory_id": str(uuid.UUID(int=9))}  # fmt: skip
    return operation.path.format_map(values) if "{" in operation.path else operation.path


def test_every_method_has_an_example() -> None:
    assert set(EXAMPLES) == set(ENDPOINTS)


@pytest.mark.parametrize("name", sorted(ENDPOINTS))
def test_every_sync_method_sends_its_operation_and_reads_its_answer(sync_client, name) -> None:
    client, script = sync_client(answer_of(name))
    args, kwargs = EXAMPLES[name]
    result = operator.attrgetter(name)(client)(*args, **kwargs)
    operation = ENDPOINTS[name].operation
    sent = script.requests[0]
    assert (sent.method, sent.url.path) == (operation.method, expected_path(name))
    if operation.response is None:
        assert result is None
    else:
        assert isinstance(result, operation.response)
    assert (sent.headers.get("content-type") == "application/json") == (operation.body is not None)


@pytest.mark.parametrize("name", sorted(ENDPOINTS))
async def test_every_async_method_sends_its_operation_and_reads_its_answer(async_client, name) -> None:
    client, script = async_client(answer_of(name))
    args, kwargs = EXAMPLES[name]
    result = await operator.attrgetter(name)(client)(*args, **kwargs)
    operation = ENDPOINTS[name].operation
    assert (script.requests[0].method, script.requests[0].url.path) == (operation.method, expected_path(name))
    assert result is None if operation.response is None else isinstance(result, operation.response)


def test_answers_keep_fields_a_newer_gateway_adds(sync_client) -> None:
    client, _ = sync_client(ok({"rules": [], "next_page": "abc"}))
    assert client.rules.list().model_extra == {"next_page": "abc"}


def test_search_sends_lists_comma_separated_and_times_with_their_zone(sync_client) -> None:
    client, script = sync_client(answer_of("search"))
    since = datetime(2026, 11, 1, tzinfo=UTC)
    client.search(
        "u1", "deploys", memory_types=["fact", "episodic"], scopes=["project"], tags=["ops", "prod"], since=since,
        decay=False, mmr=True, k=5, project_id="CloudRetail",
    )  # fmt: skip
    assert list(script.requests[0].url.params.multi_items()) == [
        ("q", "deploys"), ("user_id", "u1"), ("project_id", "CloudRetail"), ("k", "5"),
        ("memory_types", "fact,episodic"), ("scopes", "project"), ("tags", "ops,prod"),
        ("since", "2026-11-01T00:00:00+00:00"), ("decay", "false"), ("mmr", "true"),
    ]  # fmt: skip


def test_bad_query_values_are_refused_before_sending(sync_client) -> None:
    client, script = sync_client()
    with pytest.raises(ValueError, match="timezone"):
        client.search("u1", "q", since=datetime(2026, 11, 1))
    with pytest.raises(ValueError, match="comma"):
        client.search("u1", "q", tags=["a,b"])
    with pytest.raises(TypeError):
        client.context.get("u1", "q")  # type: ignore[call-arg]  # session_id is required, as by the gateway
    assert script.requests == []


def test_path_parameters_are_encoded_whole(sync_client) -> None:
    client, script = sync_client(answer_of("entities.history"), answer_of("entities.history"), answer_of("users.erase"))
    client.entities.history("backend framework/v2", user_id="u1")
    client.entities.history("..", user_id="u1")
    client.users.erase("team/alice@example")
    raw = [r.url.raw_path for r in script.requests]
    assert raw[0] == b"/v1/entities/backend%20framework%2Fv2/history?user_id=u1"
    assert raw[1] == b"/v1/entities/%2E%2E/history?user_id=u1"
    assert raw[2] == b"/v1/users/team%2Falice%40example/erase"


def test_publish_takes_a_turn_a_dict_or_a_list_and_fills_in_missing_ids(sync_client) -> None:
    mine = uuid.uuid4()
    model = Turn(**TURN)
    client, script = sync_client(*[answer_of("turns.publish")] * 3)
    client.turns.publish(model)
    client.turns.publish({**TURN, "event_id": str(mine)})
    client.turns.publish([TURN, model, {**TURN, "tags": ["x"], "future_field": 1}])
    single, given, batch = script.bodies()
    assert model.event_id is None, "the caller's model is left as it was"
    assert uuid.UUID(single["turns"][0]["event_id"]).version == 4
    assert given["turns"][0]["event_id"] == str(mine)
    assert len({t["event_id"] for t in batch["turns"]}) == 3
    assert batch["turns"][0] == {**TURN, "event_id": batch["turns"][0]["event_id"]}, "defaults are the gateway's"
    assert batch["turns"][2]["future_field"] == 1, "a field this version does not know is the gateway's to judge"


def test_publish_refuses_nothing_and_strings(sync_client) -> None:
    client, script = sync_client()
    with pytest.raises(ValueError, match="at least one"):
        client.turns.publish([])
    with pytest.raises(TypeError):
        client.turns.publish("hello")  # type: ignore[arg-type]
    with pytest.raises(pydantic.ValidationError):
        client.turns.publish({"content": "who said it?"})
    assert script.requests == []


def test_a_tool_event_gets_an_event_id_and_keeps_a_given_one(sync_client) -> None:
    client, script = sync_client(*[answer_of("tool_events.record")] * 2)
    event = {"user_id": "u1", "session_id": "s1", "skill": "deploy", "status": "failure", "feedback": "no dist"}
    client.tool_events.record(event)
    client.tool_events.record({**event, "event_id": str(uuid.UUID(int=9))})
    made, given = script.bodies()
    assert uuid.UUID(made["event_id"]).version == 4 and made["feedback"] == "no dist"
    assert given["event_id"] == str(uuid.UUID(int=9))


def test_a_setting_is_replaced_whole(sync_client) -> None:
    client, script = sync_client(answer_of("tenant.retention.set"), answer_of("tenant.privacy.set"))
    client.tenant.retention.set(max_age_days=30)
    client.tenant.privacy.set(redact_phone=True)
    retention, privacy = script.bodies()
    assert retention == {
        "compact_after_days": None, "min_importance": None, "max_age_days": 30, "max_per_user": None,
        "unaccessed_days": None, "decay_half_life_days": None,
    }  # fmt: skip
    assert privacy == {"redact_email": False, "redact_phone": True}


def test_methods_are_named_documented_and_signed_as_users_call_them(sync_client) -> None:
    client, _ = sync_client()
    publish = client.turns.publish
    assert publish.__name__ == "publish" and publish.__qualname__ == "Turns.publish"
    assert "event_id" in (publish.__doc__ or "")
    signature = inspect.signature(client.search)
    assert list(signature.parameters)[:2] == ["user_id", "query"] and signature.return_annotation == "SearchResult"
