"""Avro on the wire: a 5-byte header (magic 0, 4-byte schema id) then the Avro body.

The header is the Confluent wire format, so the same bytes can be read by a
schema-registry-aware consumer once the ids are registered there. Records are
plain dicts (cheapest to build and read, docs/benchmarks.md); logical types come back as
``uuid.UUID`` and timezone-aware ``datetime``.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping
from typing import Any

import fastavro
from fastavro.read import SchemaResolutionError

from schemas.errors import DecodeError, EncodeError, SchemaError
from schemas.registry import (
    AUDIT_RECORD,
    COMPACTION_REQUEST,
    FACT_EVENT,
    TURN_EVENT,
    ReleasedSchema,
    by_id,
    newest,
)

MAGIC = 0
_HEADER = struct.Struct(">bI")
HEADER_SIZE = _HEADER.size


class AvroCodec:
    """Encodes with the newest version of one record type; decodes any released version."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def writer(self) -> ReleasedSchema:
        return newest(self.name)

    def encode(self, record: Mapping[str, Any]) -> bytes:
        schema = self.writer
        buf = io.BytesIO()
        buf.write(_HEADER.pack(MAGIC, schema.id))
        try:
            fastavro.schemaless_writer(buf, schema.parsed, record)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise EncodeError(f"{self.name} v{schema.version}: {exc}") from exc
        return buf.getvalue()

    def decode(self, data: bytes | None) -> dict[str, Any]:
        if not data:
            raise DecodeError("empty record (no value)")
        if len(data) < HEADER_SIZE:
            raise DecodeError(f"record of {len(data)} bytes is shorter than the 5-byte header")
        magic, schema_id = _HEADER.unpack_from(data)
        if magic != MAGIC:
            raise DecodeError(f"unknown magic byte {magic} (expected {MAGIC}: memstream Avro)")
        try:
            writer = by_id(schema_id)
        except SchemaError as exc:
            raise DecodeError(f"unknown schema id {schema_id} (a newer producer?)") from exc
        if writer.name != self.name:
            raise DecodeError(f"schema id {schema_id} is {writer.name}, expected {self.name}")
        reader = self.writer
        body = io.BytesIO(data)
        body.seek(HEADER_SIZE)
        try:
            record = fastavro.schemaless_reader(body, writer.parsed, reader.parsed if reader.id != writer.id else None)
        except SchemaResolutionError as exc:
            raise DecodeError(f"{self.name} v{writer.version} cannot be read as v{reader.version}: {exc}") from exc
        except (
            EOFError,
            ValueError,
            TypeError,
            IndexError,
            UnicodeDecodeError,
            OverflowError,
        ) as exc:
            raise DecodeError(f"corrupt Avro body for {self.name} v{writer.version}: {exc!r}") from exc
        if body.tell() != len(data):
            raise DecodeError(f"{len(data) - body.tell()} trailing bytes after a {self.name} v{writer.version} record")
        if not isinstance(record, dict):  # pragma: no cover - records are dicts
            raise DecodeError(f"{self.name} decoded to {type(record).__name__}, not a record")
        return record


def turn_event_codec() -> AvroCodec:
    return AvroCodec(TURN_EVENT)


def audit_record_codec() -> AvroCodec:
    return AvroCodec(AUDIT_RECORD)


def fact_event_codec() -> AvroCodec:
    return AvroCodec(FACT_EVENT)


def compaction_request_codec() -> AvroCodec:
    return AvroCodec(COMPACTION_REQUEST)
