"""The base of every error memstream raises on purpose."""

from __future__ import annotations


class MemstreamError(Exception):
    """Base class of memstream's own errors."""


class StackError(MemstreamError):
    """The embedded local stack could not start or stop a component."""
