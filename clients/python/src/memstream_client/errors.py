"""What can go wrong talking to the gateway, one class per kind of answer.

Every exception of this package is a ``MemstreamError``. An answer with an error status is an
``APIStatusError`` (a subclass per status, below) carrying the gateway's error shape
``{"error": {"code", "message", "details"}}`` and the request's id (``X-Request-Id``, to quote
when reporting a problem). A request that got no answer is an ``APIConnectionError``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import httpx

from memstream_client.retries import parse_retry_after

#: The header naming a request; the gateway sets it on every answer.
REQUEST_ID_HEADER = "x-request-id"
#: Characters of a non-JSON error body kept in the message (a proxy's error page, say).
MAX_TEXT_CHARS = 500


class MemstreamError(Exception):
    """The base of every error this package raises."""


class InvalidArgumentError(MemstreamError, ValueError):
    """An argument the gateway would refuse, refused before anything is sent (a time without a
    timezone, a list item holding the separator, an empty path parameter)."""


class MissingAPIKeyError(MemstreamError):
    """No API key: pass ``api_key=`` or set ``MEMSTREAM_API_KEY``. Raised when a ``/v1`` call is
    made, before anything is sent (a client without a key can still be made and configured)."""


class APIConnectionError(MemstreamError):
    """No answer: the gateway could not be reached, or the connection failed mid-request."""

    def __init__(self, message: str, *, request: httpx.Request | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.request = request


class APITimeoutError(APIConnectionError):
    """No answer within the client's ``timeout_s``."""


class UnexpectedResponseError(MemstreamError):
    """A success status whose body is not what the endpoint documents (not JSON, or not the
    model's shape): a proxy in the way, or a gateway of another version."""

    def __init__(self, message: str, *, status_code: int, response: httpx.Response) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.response = response


class APIStatusError(MemstreamError):
    """The gateway answered with an error status."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        code: str | None,
        request_id: str | None,
        details: list[dict[str, Any]],
        response: httpx.Response,
    ) -> None:
        described = f"{status_code} {code}: {message}" if code else f"{status_code}: {message}"
        super().__init__(described + (f" (request id {request_id})" if request_id else ""))
        self.message = message
        self.status_code = status_code
        #: The gateway's stable error code, e.g. ``missing_scope`` (None when the body was not
        #: the gateway's error shape, e.g. a proxy's page).
        self.code = code
        self.request_id = request_id
        self.details = details
        self.response = response


class BadRequestError(APIStatusError):
    """A 4xx without a class of its own (400, 405, 408, 413, 415, 431, ...)."""


class AuthenticationError(APIStatusError):
    """401: no key, a malformed, unknown or revoked one."""


class PermissionDeniedError(APIStatusError):
    """403: the key lacks a scope, or the request names another tenant or agent."""


class NotFoundError(APIStatusError):
    """404."""


class ConflictError(APIStatusError):
    """409: e.g. an event id already used for another turn, or a rule limit."""


class ValidationError(APIStatusError):
    """422: the request broke the gateway's rules; ``errors`` names each field
    (``{"loc": [...], "msg": ..., "type": ...}``)."""

    @property
    def errors(self) -> list[dict[str, Any]]:
        return self.details


class RateLimitError(APIStatusError):
    """429: a rate limit, or the tenant's permission evaluations are busy. ``retry_after``:
    the seconds the gateway asked the caller to wait (None if it did not say)."""

    def __init__(self, message: str, *, retry_after: float | None, **rest: Any) -> None:
        super().__init__(message, **rest)
        self.retry_after = retry_after


class InternalServerError(APIStatusError):
    """A 5xx other than 503."""


class UnavailableError(APIStatusError):
    """503: the broker or a store is unavailable for now."""


STATUS_ERRORS: dict[int, type[APIStatusError]] = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: ValidationError,
    503: UnavailableError,
}


def error_class(status_code: int) -> type[APIStatusError]:
    if status_code in STATUS_ERRORS:
        return STATUS_ERRORS[status_code]
    if status_code == 429:
        return RateLimitError
    return InternalServerError if status_code >= 500 else BadRequestError


def error_from_response(response: httpx.Response, *, now: datetime | None = None) -> APIStatusError:
    """The exception for an error answer (``now``: the clock ``Retry-After`` dates count from)."""
    code, message, details = _error_body(response)
    common: dict[str, Any] = {
        "status_code": response.status_code,
        "code": code,
        "request_id": response.headers.get(REQUEST_ID_HEADER),
        "details": details,
        "response": response,
    }
    cls = error_class(response.status_code)
    if cls is RateLimitError:
        retry_after = parse_retry_after(response.headers.get("retry-after"), now=now)
        return RateLimitError(message, retry_after=retry_after, **common)
    return cls(message, **common)


def _error_body(response: httpx.Response) -> tuple[str | None, str, list[dict[str, Any]]]:
    """(code, message, details) of the gateway's error shape, or of whatever else came back."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        code = error.get("code")
        raw_details = error.get("details")
        details = [d for d in raw_details if isinstance(d, dict)] if isinstance(raw_details, list) else []
        return (code if isinstance(code, str) else None), error["message"], details
    text = response.text.strip()[:MAX_TEXT_CHARS]
    return None, text or response.reason_phrase or "error", []
