"""The SDK and the gateway agree: every gateway operation has an SDK method on both clients,
with the same parameters, and every request and answer model has exactly the properties of
the gateway's schema — names, required-ness, nullability and JSON types — recursively.

Read from the gateway's own OpenAPI document (``create_app(...).openapi()``, no services),
so a change to a route or a model of the gateway fails here until the SDK follows it. Skipped
where the gateway is not installed (the SDK's distribution on its own)."""

from __future__ import annotations

import inspect
import operator
import types
import typing
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import pydantic
import pytest

from memstream_client import AsyncMemstream, Memstream
from memstream_client.endpoint import Endpoint
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource
from memstream_client.resources import ENDPOINTS, EXCLUDED

app_module = pytest.importorskip("agents_gateway.app", reason="the gateway is not installed")
settings_module = pytest.importorskip("memstream.settings", reason="the gateway is not installed")

#: Where the document cannot say what the gateway accepts, and the SDK follows the gateway:
#: a key bound to an agent may leave ``agent_id`` out (the key names the agent), which the
#: document cannot say per key, so it requires the field of every caller.
KNOWN_DIFFERENCES = {("TurnIn", "agent_id"), ("ToolEventIn", "agent_id")}

Document = dict[str, Any]


@pytest.fixture(scope="module")
def document() -> Document:
    app = app_module.create_app(settings_module.Settings(_env_file=None))
    openapi: Document = app.openapi()
    return openapi


def operations(document: Document) -> dict[tuple[str, str], Document]:
    return {
        (method.upper(), path): operation
        for path, by_method in document["paths"].items()
        for method, operation in by_method.items()
    }


def test_every_gateway_operation_has_exactly_one_sdk_method(document: Document) -> None:
    covered = [(e.operation.method, e.operation.path) for e in ENDPOINTS.values()]
    assert len(covered) == len(set(covered)), "two SDK methods call the same operation"
    assert set(covered) | EXCLUDED == set(operations(document)), "the SDK's table and the gateway differ"
    assert not set(covered) & EXCLUDED


def listed_methods(target: object, prefix: str = "") -> Iterator[tuple[str, Endpoint[Any, Any]]]:
    """Every endpoint reachable on a client: its own methods and its resources', recursively."""
    for name, value in vars(type(target)).items():
        if isinstance(value, SyncMethod | AsyncMethod):
            yield prefix + name, value.endpoint
    for name, value in vars(target).items():
        if isinstance(value, SyncResource | AsyncResource) and not name.startswith("_"):
            yield from listed_methods(value, f"{prefix}{name}.")


@pytest.mark.parametrize("client_class", [Memstream, AsyncMemstream])
def test_both_clients_have_every_method_of_the_table(client_class: type[Any]) -> None:
    client = client_class("http://gateway", "msk_key")
    found = dict(listed_methods(client))
    assert found == ENDPOINTS
    for name, endpoint in ENDPOINTS.items():
        assert operator.attrgetter(name)(client).__wrapped__ is endpoint.build


@pytest.mark.parametrize("name", sorted(ENDPOINTS))
def test_parameters_are_the_gateways(document: Document, name: str) -> None:
    endpoint = ENDPOINTS[name]
    operation = operations(document)[(endpoint.operation.method, endpoint.operation.path)]
    theirs = {p["name"]: p for p in operation.get("parameters", [])}
    required = {n for n, p in theirs.items() if p.get("required")}
    body = endpoint.operation.body
    signature = inspect.signature(endpoint.build)
    hints = typing.get_type_hints(endpoint.build)
    whole_body = body is not None and len(signature.parameters) == 1
    if body is not None and not whole_body:  # the body's fields are keyword arguments
        schema = resolve(document, operation["requestBody"]["content"]["application/json"]["schema"])
        theirs |= {field: {"schema": prop} for field, prop in schema["properties"].items()}
        required |= set(schema.get("required", []))
    ours = {endpoint.operation.renamed.get(p, p): p for p in signature.parameters}
    if whole_body:
        ours = {}
    assert set(ours) == set(theirs), f"{name}: the SDK's arguments differ from the gateway's parameters"
    for wire, python in ours.items():
        mandatory = signature.parameters[python].default is inspect.Parameter.empty
        assert mandatory == (wire in required), f"{name}({python}): required-ness differs"
        problems = list(compare_types(document, hints[python], theirs[wire]["schema"], "request", f"{name}({python})"))
        assert not problems, problems


def test_every_model_is_the_gateways_schema(document: Document) -> None:
    problems: list[str] = []
    for name, endpoint in ENDPOINTS.items():
        operation = operations(document)[(endpoint.operation.method, endpoint.operation.path)]
        answers = [
            answer.get("content", {}).get("application/json", {}).get("schema")
            for status, answer in operation["responses"].items()
            if status.startswith("2")
        ]
        assert len(answers) == 1, f"{name}: one success answer expected"
        if endpoint.operation.response is None:
            assert answers[0] is None, f"{name}: the gateway answers a body the SDK ignores"
        else:
            problems += compare_model(document, endpoint.operation.response, answers[0], "response", name)
        body = endpoint.operation.body
        documented = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        assert (body is None) == (documented is None), f"{name}: the request body differs"
        if body is not None:
            choices = documented.get("oneOf", [documented])
            best = min((compare_model(document, body, choice, "request", name) for choice in choices), key=len)
            problems += best
    assert not problems, "\n".join(problems)


def test_the_comparison_finds_a_difference(document: Document) -> None:
    """The checks above can fail: a model with a field too many, one missing, a wrong type."""

    class Drifted(pydantic.BaseModel):
        accepted: str  # an integer in the gateway's TurnsAccepted
        extra_field: int

    found = compare_model(document, Drifted, {"$ref": "#/components/schemas/TurnsAccepted"}, "response", "x")
    assert any("extra_field" in p for p in found) and any("event_ids" in p for p in found)
    assert any("accepted" in p and "type" in p for p in found)


# --- the comparison -----------------------------------------------------------------------


def resolve(document: Document, schema: Document) -> Document:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def compare_model(
    document: Document, model: type[pydantic.BaseModel], schema: Document, direction: str, where: str
) -> list[str]:
    name = schema["$ref"].rsplit("/", 1)[1] if "$ref" in schema else "?"
    resolved = resolve(document, schema)
    here = f"{where}: {model.__name__} ({name})"
    props, required = resolved.get("properties", {}), set(resolved.get("required", []))
    fields = model.model_fields
    problems = [f"{here}: {f} is not in the gateway's schema" for f in sorted(set(fields) - set(props))]
    problems += [f"{here}: the SDK lacks {p}" for p in sorted(set(props) - set(fields))]
    for field_name in sorted(set(fields) & set(props)):
        if (name, field_name) in KNOWN_DIFFERENCES:
            continue
        if fields[field_name].is_required() != (field_name in required):
            problems.append(f"{here}.{field_name}: required-ness differs")
        annotation = fields[field_name].annotation
        problems += compare_types(document, annotation, props[field_name], direction, f"{here}.{field_name}")
    return problems


def schema_kinds(document: Document, schema: Document) -> tuple[list[Document], bool]:
    """The non-null alternatives of a property's schema, and whether it may be null."""
    if "$ref" in schema:  # a model (kept by name, for the messages)
        return [schema], False
    if "anyOf" in schema or "oneOf" in schema:
        parts = [schema_kinds(document, s) for s in schema.get("anyOf", schema.get("oneOf", []))]
        return [k for kinds, _ in parts for k in kinds], any(nullable for _, nullable in parts)
    if schema.get("type") == "null":
        return [], True
    return [schema], False


def sdk_kinds(annotation: Any) -> tuple[list[Any], bool]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        return [a for a in args if a is not type(None)], type(None) in args
    return [annotation], annotation is type(None)


def json_type(document: Document, schema: Document) -> str:
    if "const" in schema:
        value = schema["const"]
        return {bool: "boolean", int: "integer", float: "number", str: "string"}[type(value)]
    if "enum" in schema:
        return "string"
    if "$ref" in schema or "properties" in schema:
        return "model"
    return str(schema.get("type", "any"))


def compare_types(document: Document, annotation: Any, schema: Document, direction: str, where: str) -> Iterator[str]:
    """Differences between an SDK annotation and a schema: nullability (not for query
    parameters, where None means 'left out'), then each side's JSON types, recursively."""
    theirs, their_null = schema_kinds(document, schema)
    ours, our_null = sdk_kinds(annotation)
    parameter = "properties" not in schema and where.endswith(")")
    if our_null != their_null and not parameter:
        yield f"{where}: nullable in {'the SDK' if our_null else 'the gateway'} only ({annotation})"
    for our in ours:
        matched = [t for t in theirs if accepts(document, t, our, direction)]
        if not matched:
            yield f"{where}: type {our} does not fit the gateway's {[json_type(document, t) for t in theirs]}"
            continue
        yield from compare_nested(document, our, matched[0], direction, where)
    if direction == "response":  # the SDK must read whatever the gateway may send
        for their in theirs:
            if not any(accepts(document, their, our, direction) for our in ours):
                yield f"{where}: the gateway may send {json_type(document, their)}, the SDK reads {ours}"


def accepts(document: Document, their: Document, our: Any, direction: str) -> bool:
    kind = json_type(document, their)
    origin = typing.get_origin(our)
    if origin is typing.Literal:
        values = set(typing.get_args(our))
        return kind == "string" and ("enum" not in their or values <= set(their["enum"]))
    if origin is Sequence:  # a list the SDK sends comma-separated in the query
        return kind == "string"
    if origin is list:
        return kind == "array"
    if origin is dict:
        return kind == "object"
    if isinstance(our, type) and issubclass(our, pydantic.BaseModel):
        return kind == "model"
    fmt = their.get("format")
    simple = {str: "string", uuid.UUID: "string", datetime: "string", bool: "boolean", int: "integer"}
    if our is float:  # JSON numbers: an integer fits a float either way
        return kind in ("number", "integer")
    if our is int and direction == "request":
        return kind in ("integer", "number")
    if (our is uuid.UUID and fmt != "uuid") or (our is datetime and fmt != "date-time"):
        return False
    return simple.get(our) == kind


def compare_nested(document: Document, our: Any, their: Document, direction: str, where: str) -> Iterator[str]:
    origin = typing.get_origin(our)
    if origin is list:
        yield from compare_types(document, typing.get_args(our)[0], their.get("items", {}), direction, where + "[]")
    elif origin is dict:
        values = their.get("additionalProperties", {})
        if isinstance(values, dict) and values:
            yield from compare_types(document, typing.get_args(our)[1], values, direction, where + "{}")
    elif isinstance(our, type) and issubclass(our, pydantic.BaseModel):
        yield from compare_model(document, our, their, direction, where)
