"""What both clients share: the request a call makes, and what each attempt's outcome means —
the answer's value, an error to raise, or a wait before the next attempt. ``Memstream`` and
``AsyncMemstream`` only send and sleep (``client.py``, ``async_client.py``).

The request is built once per call, so every attempt sends the same bytes: the event ids that
``turns.publish`` and ``tool_events.record`` fill in are the ones every retry repeats.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx
import pydantic

from memstream_client.config import API_KEY_ENV, ClientOptions
from memstream_client.encoding import path_segment
from memstream_client.endpoint import Call
from memstream_client.errors import (
    APIConnectionError,
    APITimeoutError,
    MissingAPIKeyError,
    UnexpectedResponseError,
    error_from_response,
)
from memstream_client.retries import DEFAULT_POLICY, RetryPolicy, failure_retryable, parse_retry_after, status_retryable
from memstream_client.version import VERSION

log = logging.getLogger(__name__)

T = TypeVar("T")
HttpClient = httpx.Client | httpx.AsyncClient

USER_AGENT = f"memstream-client/{VERSION} (python)"
#: Headers that carry a key the gateway accepts (besides ``api_key``).
KEY_HEADERS = ("authorization", "x-api-key")


@dataclass(frozen=True)
class Done(Generic[T]):
    value: T


@dataclass(frozen=True)
class Retry:
    delay_s: float


class RequestCore:
    """One client object's options applied to calls (``with_options`` makes another core)."""

    def __init__(self, options: ClientOptions, policy: RetryPolicy = DEFAULT_POLICY) -> None:
        self.options = options
        self.policy = policy

    def request(self, http: HttpClient, call: Call[Any]) -> httpx.Request:
        """The request of ``call``, built once and sent as is on every attempt."""
        operation = call.operation
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **self.options.headers}
        if operation.authenticated:
            if self.options.api_key is not None:
                headers["Authorization"] = f"Bearer {self.options.api_key}"
            elif not (_holds_key(headers) or _holds_key(http.headers)):
                raise MissingAPIKeyError(
                    f"{operation.method} {operation.path} needs an API key: pass api_key=... or set {API_KEY_ENV}"
                )
        path = operation.path.format_map({name: path_segment(v) for name, v in call.parts.path_params.items()})
        content = None
        if call.parts.json is not None:
            content = json.dumps(call.parts.json, ensure_ascii=False, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        return http.build_request(
            operation.method,
            self.options.base_url + path,
            params=list(call.parts.query),
            content=content,
            headers=headers,
            timeout=httpx.Timeout(self.options.timeout_s),
        )

    def after_response(self, call: Call[T], attempt: int, response: httpx.Response) -> Done[T] | Retry:
        """The value of a success; a ``Retry`` when another attempt is due; else raises the
        answer's ``APIStatusError``. ``attempt`` counts from 0."""
        status = response.status_code
        if 200 <= status < 300:
            return Done(self._parse(call, response))
        if status < 400:
            raise UnexpectedResponseError(
                f"{call.operation.method} {call.operation.path}: unexpected status {status}",
                status_code=status,
                response=response,
            )
        error = error_from_response(response)
        if attempt < self.options.max_retries and status_retryable(status, idempotent=call.operation.idempotent):
            delay_s = self._wait_s(attempt, response)
            if delay_s is not None:
                self._log_retry(call, attempt, delay_s, f"status {status}")
                return Retry(delay_s)
        raise error

    def after_failure(self, call: Call[Any], attempt: int, exc: httpx.TransportError) -> Retry:
        """A ``Retry`` when a request that got no answer may be tried again; else raises
        ``APITimeoutError`` or ``APIConnectionError`` (from ``exc``)."""
        if attempt < self.options.max_retries and failure_retryable(exc, idempotent=call.operation.idempotent):
            delay_s = self.policy.backoff_s(attempt)
            self._log_retry(call, attempt, delay_s, type(exc).__name__)
            return Retry(delay_s)
        where = f"{call.operation.method} {self.options.base_url}{call.operation.path}"
        request = exc.request if _has_request(exc) else None
        if isinstance(exc, httpx.TimeoutException):
            message = f"{where}: no answer within {self.options.timeout_s:g} s ({type(exc).__name__})"
            raise APITimeoutError(message, request=request) from exc
        raise APIConnectionError(f"{where}: {type(exc).__name__}: {exc}", request=request) from exc

    def _wait_s(self, attempt: int, response: httpx.Response) -> float | None:
        """The answer's ``Retry-After``, else the backoff; None when the gateway asks for more
        than the policy's ``max_retry_after_s`` (the error is raised instead)."""
        asked_s = parse_retry_after(response.headers.get("retry-after"))
        if asked_s is None:
            return self.policy.backoff_s(attempt)
        return asked_s if asked_s <= self.policy.max_retry_after_s else None

    def _parse(self, call: Call[T], response: httpx.Response) -> T:
        operation = call.operation
        if operation.response is None:
            return call.parse(None)
        try:
            body = response.json()
        except ValueError as exc:
            raise UnexpectedResponseError(
                f"{operation.method} {operation.path}: the answer is not JSON",
                status_code=response.status_code,
                response=response,
            ) from exc
        try:
            return call.parse(body)
        except pydantic.ValidationError as exc:
            raise UnexpectedResponseError(
                f"{operation.method} {operation.path}: the answer is not a {operation.response.__name__}: {exc}",
                status_code=response.status_code,
                response=response,
            ) from exc

    def _log_retry(self, call: Call[Any], attempt: int, delay_s: float, why: str) -> None:
        log.info(
            "retrying %s %s in %.2f s (retry %d of %d): %s",
            call.operation.method, call.operation.path, delay_s, attempt + 1, self.options.max_retries, why,
        )  # fmt: skip


def _holds_key(headers: Mapping[str, str] | httpx.Headers) -> bool:
    present = {name.lower() for name in headers}
    return any(name in present for name in KEY_HEADERS)


def _has_request(exc: httpx.TransportError) -> bool:
    try:
        exc.request  # noqa: B018 - httpx raises RuntimeError when the error has no request
    except RuntimeError:
        return False
    return True
