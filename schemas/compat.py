"""Schema compatibility: can a reader schema read what a writer schema wrote?

Checked the practical way: random records generated from the writer schema are
written and read back with the reader schema under Avro's resolution rules. A
missing default, a changed type or a removed enum symbol makes the read fail.
"""

from __future__ import annotations

import io
from typing import Any

import fastavro
from fastavro.read import SchemaResolutionError
from fastavro.utils import generate_many

from schemas.errors import SchemaError


def parse(schema: Any) -> Any:
    return fastavro.parse_schema(schema, named_schemas={})


def check_readable(writer: Any, reader: Any, *, samples: int = 200) -> None:
    """Raise SchemaError when ``reader`` cannot read records written with ``writer``."""
    writer_parsed, reader_parsed = parse(writer), parse(reader)
    for record in generate_many(writer_parsed, samples):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, writer_parsed, record)
        buf.seek(0)
        try:
            fastavro.schemaless_reader(buf, writer_parsed, reader_parsed)
        except (SchemaResolutionError, ValueError, TypeError, KeyError) as exc:
            raise SchemaError(f"reader cannot read the writer's records: {exc}") from exc
