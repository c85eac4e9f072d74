"""Errors of the event contract."""

from __future__ import annotations

from memstream.errors import MemstreamError


class SchemaError(MemstreamError):
    """A schema is missing, malformed or incompatible."""


class DecodeError(SchemaError, ValueError):
    """Bytes on a topic are not a record this code can read; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EncodeError(SchemaError, ValueError):
    """A value does not fit the schema it is written with."""
