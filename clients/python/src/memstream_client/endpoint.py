"""An endpoint of the gateway, declared once for both clients.

An ``Endpoint`` is an ``Operation`` (method, path, body and answer models, whether a retry is
safe) and a function that turns a caller's arguments into the parts of a request. The same
endpoint serves ``Memstream`` and ``AsyncMemstream``: a resource class lists it with
``SyncMethod`` or ``AsyncMethod`` (``resource.py``), and the method a user calls has the
builder's signature and docstring, returning the answer model (or an awaitable of it).

``Operation`` also makes the table the SDK's tests check against the gateway's OpenAPI
document: every operation is covered, with the same parameters and models.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, ParamSpec, TypeVar, overload

from pydantic import BaseModel

from memstream_client.types import Method

P = ParamSpec("P")
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Operation:
    method: Method
    #: The path as the gateway's document writes it, e.g. ``/v1/users/{user_id}/erase``.
    path: str
    #: The model of a 2xx answer's body; None for an answer without one (204).
    response: type[BaseModel] | None
    #: The model of the request body; None without one.
    body: type[BaseModel] | None = None
    #: Safe to send again after it may have reached the gateway (reads, PUT, DELETE, and
    #: writes made idempotent by an event id). See ``retries.py``.
    idempotent: bool = False
    #: Needs an API key (every ``/v1`` endpoint).
    authenticated: bool = True
    #: Python argument names that the gateway spells differently (``query`` for ``q``).
    renamed: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RequestParts:
    """What a call fills in: path parameters (raw; they are encoded when sent), the query, and
    a JSON body."""

    path_params: Mapping[str, str] = field(default_factory=dict)
    query: Sequence[tuple[str, str]] = ()
    json: Any = None


@dataclass(frozen=True)
class Call(Generic[T]):
    """One call of an endpoint: what to send, and how to read the answer's JSON."""

    operation: Operation
    parts: RequestParts
    parse: Callable[[Any], T]


class Endpoint(Generic[P, T]):
    def __init__(self, operation: Operation, build: Callable[P, RequestParts], parse: Callable[[Any], T]) -> None:
        self.operation = operation
        self.build = build
        self.parse = parse
        self.__doc__ = build.__doc__
        self.__name__ = build.__name__
        self.__qualname__ = build.__qualname__
        self.__module__ = build.__module__

    def call(self, *args: P.args, **kwargs: P.kwargs) -> Call[T]:
        return Call(self.operation, self.build(*args, **kwargs), self.parse)

    def signature(self) -> inspect.Signature:
        """The builder's signature, answering the response model (what help() shows)."""
        answer = self.operation.response.__name__ if self.operation.response is not None else "None"
        return inspect.signature(self.build).replace(return_annotation=answer)

    def __repr__(self) -> str:
        return f"<endpoint {self.operation.method} {self.operation.path}>"


def _nothing(_: Any) -> None:
    return None


@overload
def endpoint(
    method: Method,
    path: str,
    *,
    response: type[M],
    body: type[BaseModel] | None = ...,
    idempotent: bool | None = ...,
    renamed: Mapping[str, str] | None = ...,
) -> Callable[[Callable[P, RequestParts]], Endpoint[P, M]]: ...
@overload
def endpoint(
    method: Method,
    path: str,
    *,
    response: None,
    body: type[BaseModel] | None = ...,
    idempotent: bool | None = ...,
    renamed: Mapping[str, str] | None = ...,
) -> Callable[[Callable[P, RequestParts]], Endpoint[P, None]]: ...
def endpoint(
    method: Method,
    path: str,
    *,
    response: type[BaseModel] | None,
    body: type[BaseModel] | None = None,
    idempotent: bool | None = None,
    renamed: Mapping[str, str] | None = None,
) -> Callable[[Callable[P, RequestParts]], Endpoint[P, Any]]:
    """Declare the decorated function as the request builder of ``method path``. ``idempotent``
    is by the method unless given: GET, PUT and DELETE are, POST is not."""
    safe = method != "POST" if idempotent is None else idempotent
    operation = Operation(
        method=method, path=path, response=response, body=body, idempotent=safe, renamed=dict(renamed or {})
    )
    parse: Callable[[Any], Any] = response.model_validate if response is not None else _nothing

    def declare(build: Callable[P, RequestParts]) -> Endpoint[P, Any]:
        return Endpoint(operation, build, parse)

    return declare
