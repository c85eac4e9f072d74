"""Errors of the sinks."""

from __future__ import annotations

from memstream.errors import MemstreamError


class SinkError(MemstreamError):
    """A store rejected or could not take a write."""


class SchemaNotReadyError(SinkError):
    """The database has not been migrated to what this code expects."""
