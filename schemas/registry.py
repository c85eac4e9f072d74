"""The released Avro schemas, parsed once.

``released.json`` lists every version ever released with a permanent numeric id.
Records on the wire carry that id (see ``codec.py``), so a reader always knows
which writer schema produced the bytes and resolves them to its own (newest)
version with Avro's schema-resolution rules.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import fastavro
import orjson

from schemas.errors import SchemaError

TURN_EVENT = "memstream.TurnEvent"
AUDIT_RECORD = "memstream.AuditRecord"
FACT_EVENT = "memstream.FactEvent"
COMPACTION_REQUEST = "memstream.CompactionRequest"


@dataclass(frozen=True)
class ReleasedSchema:
    id: int
    name: str
    version: int
    file: str
    sha256: str
    parsed: Any  # fastavro's parsed schema (a dict with resolved named types)
    raw: bytes


def _read(file: str) -> bytes:
    return resources.files("schemas").joinpath("avro", file).read_bytes()


@cache
def released() -> tuple[ReleasedSchema, ...]:
    """Every released schema version, parsed once per process."""
    listing = orjson.loads(resources.files("schemas").joinpath("released.json").read_bytes())
    out = []
    for entry in listing["schemas"]:
        raw = _read(entry["file"])
        out.append(
            ReleasedSchema(
                id=int(entry["id"]),
                name=entry["name"],
                version=int(entry["version"]),
                file=entry["file"],
                sha256=entry["sha256"],
                parsed=fastavro.parse_schema(orjson.loads(raw), named_schemas={}),
                raw=raw,
            )
        )
    ids = [s.id for s in out]
    if len(ids) != len(set(ids)):
        raise SchemaError("released.json reuses a schema id")
    return tuple(out)


def file_digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


@cache
def by_id(schema_id: int) -> ReleasedSchema:
    for schema in released():
        if schema.id == schema_id:
            return schema
    raise SchemaError(f"unknown schema id {schema_id}")


@cache
def newest(name: str) -> ReleasedSchema:
    """The newest released version of a record type: what this code writes and reads into."""
    versions = [s for s in released() if s.name == name]
    if not versions:
        raise SchemaError(f"no released schema named {name}")
    return max(versions, key=lambda s: s.version)
