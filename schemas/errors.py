"""Errors of the event contract. ``schemas`` is the bottom layer (everything may import it,
it imports nothing of ours), so its base error is its own."""

from __future__ import annotations


class SchemaError(Exception):
    """A schema is missing, malformed or incompatible (the base of this package's errors)."""


class DecodeError(SchemaError, ValueError):
    """Bytes on a topic are not a record this code can read; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EncodeError(SchemaError, ValueError):
    """A value does not fit the schema it is written with."""
