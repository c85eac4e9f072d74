"""Every released schema version is readable by the newest reader; incompatible changes fail."""

import copy
import io
import struct
import uuid
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import fastavro
import numpy as np
import orjson
import pytest
from fastavro.utils import generate_many

from schemas.codec import AvroCodec, turn_event_codec
from schemas.compat import check_readable
from schemas.errors import DecodeError, EncodeError, SchemaError
from schemas.registry import TURN_EVENT, file_digest, newest, released

RELEASED = released()


def raw_schema(file: str) -> dict[str, Any]:
    return orjson.loads(resources.files("schemas").joinpath("avro", file).read_bytes())


def _norm(value: Any) -> Any:
    """Compare logical types by meaning: UUIDs as UUIDs, timestamps as UTC instants."""
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, float):  # Avro "float" keeps 32 bits
        return float(np.float32(value))
    if isinstance(value, datetime):  # the generator writes timestamp-micros as raw ints
        delta = value - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            return value
    return value


@pytest.mark.parametrize("writer", RELEASED, ids=lambda s: f"{s.name}-v{s.version}")
def test_every_released_version_is_readable_by_the_newest_reader(writer: Any) -> None:
    reader = newest(writer.name)
    check_readable(orjson.loads(writer.raw), orjson.loads(reader.raw))
    # ... and through the codec, framed with the writer's id, as the worker reads it.
    codec = AvroCodec(writer.name)
    for record in generate_many(writer.parsed, 50):
        buf = io.BytesIO()
        buf.write(struct.pack(">bI", 0, writer.id))
        fastavro.schemaless_writer(buf, writer.parsed, record)
        decoded = codec.decode(buf.getvalue())
        shared = {f["name"] for f in orjson.loads(writer.raw)["fields"]} & set(decoded)
        assert {f: _norm(decoded[f]) for f in shared} == {f: _norm(record[f]) for f in shared}


@pytest.mark.parametrize("schema", RELEASED, ids=lambda s: s.file)
def test_released_files_are_frozen(schema: Any) -> None:
    assert file_digest(schema.raw) == schema.sha256, (
        f"{schema.file} changed after release: add a new version with a new id instead"
    )


def test_every_schema_file_is_registered() -> None:
    on_disk = {p.name for p in resources.files("schemas").joinpath("avro").iterdir() if p.name.endswith(".avsc")}
    assert on_disk == {s.file for s in RELEASED}


def _evolve(change: str) -> dict[str, Any]:
    schema = copy.deepcopy(raw_schema(newest(TURN_EVENT).file))
    if change == "add field with default":
        schema["fields"].append({"name": "priority", "type": "int", "default": 0})
    elif change == "add field without default":
        schema["fields"].append({"name": "priority", "type": "int"})
    elif change == "change a field's type":
        for field in schema["fields"]:
            if field["name"] == "content":
                field["type"] = "int"
    elif change == "remove an enum symbol":
        for field in schema["fields"]:
            if field["name"] == "role":
                field["type"]["symbols"] = ["user", "assistant"]
    return schema


def test_adding_a_field_with_a_default_is_compatible() -> None:
    current = raw_schema(newest(TURN_EVENT).file)
    check_readable(current, _evolve("add field with default"))


@pytest.mark.parametrize("change", ["add field without default", "change a field's type", "remove an enum symbol"])
def test_an_incompatible_change_fails(change: str) -> None:
    current = raw_schema(newest(TURN_EVENT).file)
    with pytest.raises(SchemaError):
        check_readable(current, _evolve(change), samples=500)


def good_record() -> dict[str, Any]:
    return {
        "event_id": str(uuid.uuid4()),
        "tenant_id": "t",
        "agent_id": "a",
        "user_id": "u",
        "project_id": None,
        "session_id": "s",
        "role": "tool",
        "content": "ok",
        "event_time": datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
        "tool_name": "pytest",
        "tool_status": "failure",
        "tags": ["ci"],
        "metadata": {"exit": "1"},
    }


def test_codec_round_trip() -> None:
    codec = turn_event_codec()
    record = good_record()
    decoded = codec.decode(codec.encode(record))
    assert str(decoded["event_id"]) == record["event_id"]
    assert decoded["event_time"] == record["event_time"]
    assert decoded["tool_status"] == "failure"
    assert decoded["metadata"] == {"exit": "1"}


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "empty"),
        (b"\x00\x00", "shorter"),
        (b"\x07\x00\x00\x00\x01abc", "magic"),
        (b"\x00\x00\x00\x03\xe7abc", "unknown schema id"),
        (b"\x00\x00\x00\x00\x01\xff\xff\xff", "corrupt"),
    ],
)
def test_codec_names_what_is_wrong_with_bad_bytes(data: bytes, fragment: str) -> None:
    with pytest.raises(DecodeError, match=fragment):
        turn_event_codec().decode(data)


def test_codec_rejects_trailing_bytes() -> None:
    codec = turn_event_codec()
    with pytest.raises(DecodeError, match="trailing"):
        codec.decode(codec.encode(good_record()) + b"junk")


def test_codec_refuses_to_encode_a_record_that_does_not_fit() -> None:
    record = good_record()
    record["role"] = "robot"
    with pytest.raises(EncodeError):
        turn_event_codec().encode(record)


def test_unknown_record_name_is_a_schema_error() -> None:
    with pytest.raises(SchemaError):
        AvroCodec("memstream.Nope").encode(good_record())


def test_registered_as_a_faust_codec() -> None:
    from faust.serializers import codecs

    from schemas.faust_codec import CODEC_NAMES, register_faust_codecs

    register_faust_codecs()
    name = CODEC_NAMES[TURN_EVENT]
    record = good_record()
    data = codecs.dumps(name, record)
    assert data == turn_event_codec().encode(record)
    assert str(codecs.loads(name, data)["event_id"]) == record["event_id"]
