"""Resources: groups of endpoints under one name (``client.turns``, ``client.tenant.privacy``).

A resource class lists its endpoints with ``SyncMethod`` (in ``Memstream``'s resources) or
``AsyncMethod`` (in ``AsyncMemstream``'s). Read from an instance, each gives a function with
the endpoint builder's signature that sends the call through the client and returns the
parsed answer (awaitable, for the async client).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, overload

from memstream_client.endpoint import Call, Endpoint

P = ParamSpec("P")
T = TypeVar("T")


class SyncSender(Protocol):
    def _send(self, call: Call[T]) -> T: ...


class AsyncSender(Protocol):
    async def _send(self, call: Call[T]) -> T: ...


class SyncMethod(Generic[P, T]):
    """An endpoint as a method of a synchronous resource (or client)."""

    def __init__(self, endpoint: Endpoint[P, T]) -> None:
        self.endpoint = endpoint
        self.name = endpoint.build.__name__
        self.owner = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name, self.owner = name, owner.__qualname__

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> SyncMethod[P, T]: ...
    @overload
    def __get__(self, instance: SyncSender, owner: type[Any]) -> Callable[P, T]: ...
    def __get__(self, instance: SyncSender | None, owner: type[Any]) -> SyncMethod[P, T] | Callable[P, T]:
        if instance is None:
            return self
        endpoint, send = self.endpoint, instance._send

        @functools.wraps(endpoint.build)
        def method(*args: P.args, **kwargs: P.kwargs) -> T:
            return send(endpoint.call(*args, **kwargs))

        _present(method, self, endpoint)
        return method


class AsyncMethod(Generic[P, T]):
    """An endpoint as a method of an asynchronous resource (or client)."""

    def __init__(self, endpoint: Endpoint[P, T]) -> None:
        self.endpoint = endpoint
        self.name = endpoint.build.__name__
        self.owner = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name, self.owner = name, owner.__qualname__

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> AsyncMethod[P, T]: ...
    @overload
    def __get__(self, instance: AsyncSender, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, instance: AsyncSender | None, owner: type[Any]) -> AsyncMethod[P, T] | Callable[P, Awaitable[T]]:
        if instance is None:
            return self
        endpoint, send = self.endpoint, instance._send

        @functools.wraps(endpoint.build)
        async def method(*args: P.args, **kwargs: P.kwargs) -> T:
            return await send(endpoint.call(*args, **kwargs))

        _present(method, self, endpoint)
        return method


def _present(
    method: Callable[..., Any], listed: SyncMethod[Any, Any] | AsyncMethod[Any, Any], endpoint: Endpoint[Any, Any]
) -> None:
    """Name ``method`` as its class lists it, with the endpoint's signature (for help())."""
    method.__name__ = listed.name
    method.__qualname__ = f"{listed.owner}.{listed.name}" if listed.owner else listed.name
    method.__signature__ = endpoint.signature()  # type: ignore[attr-defined]


class SyncResource:
    """A group of endpoints of ``Memstream``; calls go through its client."""

    def __init__(self, client: SyncSender) -> None:
        self._client = client

    def _send(self, call: Call[T]) -> T:
        return self._client._send(call)


class AsyncResource:
    """A group of endpoints of ``AsyncMemstream``; calls go through its client."""

    def __init__(self, client: AsyncSender) -> None:
        self._client = client

    async def _send(self, call: Call[T]) -> T:
        return await self._client._send(call)
