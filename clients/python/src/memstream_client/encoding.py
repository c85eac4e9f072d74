"""Python values as the gateway reads them in a URL: query parameters and path segments."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from urllib.parse import quote

from memstream_client.errors import InvalidArgumentError

QueryValue = str | int | float | bool | datetime | uuid.UUID | Iterable[str] | None


def query_params(**values: QueryValue) -> list[tuple[str, str]]:
    """The query of a request, in the order given: None left out (the gateway's default
    applies), booleans as ``true``/``false``, datetimes in ISO 8601 (they must carry a
    timezone), lists comma-separated (the gateway's form for ``memory_types``, ``scopes`` and
    ``tags``)."""
    return [(name, query_value(name, value)) for name, value in values.items() if value is not None]


def query_value(name: str, value: QueryValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidArgumentError(
                f"{name} must include a timezone (e.g. datetime.now(UTC)), got {value.isoformat()}"
            )
        return value.isoformat()
    if isinstance(value, str | int | float | uuid.UUID):
        return str(value)
    if value is None:
        raise InvalidArgumentError(f"{name} has no value")
    return comma_separated(name, value)


def comma_separated(name: str, items: Iterable[str]) -> str:
    listed = list(items)
    for item in listed:
        if not isinstance(item, str):
            raise TypeError(f"{name} must be a list of strings, got {item!r}")
        if "," in item:
            raise InvalidArgumentError(
                f"{name}: an item cannot contain a comma (the list is sent comma-separated): {item!r}"
            )
    return ",".join(listed)


def path_segment(value: str | uuid.UUID) -> str:
    """One path parameter, percent-encoded whole (a ``/`` inside it too). A value of only dots
    is encoded as well: an HTTP client would otherwise resolve ``..`` away."""
    text = str(value)
    if not text:
        raise InvalidArgumentError("a path parameter cannot be empty")
    quoted = quote(text, safe="")
    return quoted.replace(".", "%2E") if set(text) == {"."} else quoted
