"""One error shape for every 4xx/5xx: ``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
import psycopg_pool
import redis.exceptions
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match

from agents_gateway.metrics import request_id
from agents_gateway.models import ErrorOut
from agents_gateway.producer import BrokerUnavailableError
from memstream.embedder import EmbeddingError

log = logging.getLogger(__name__)

RETRY_AFTER_S = 2

#: The error responses every authenticated endpoint can give (for the OpenAPI document).
AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "No, or an invalid, API key"},
    403: {"model": ErrorOut, "description": "Missing scope, or another tenant or agent named"},
    422: {"model": ErrorOut, "description": "Invalid parameters"},
    429: {"model": ErrorOut, "description": "Rate limit of the key exceeded (see Retry-After)"},
    503: {"model": ErrorOut, "description": "A store is unavailable (see Retry-After)"},
}


class ApiError(Exception):
    """An error with a status, a stable code and a message for the caller."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.headers = headers or {}


def error_response(
    status: int,
    code: str,
    message: str,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message, "details": details or []}},
        status_code=status,
        headers=headers,
    )


def validation_details(errors: Any) -> list[dict[str, Any]]:
    """Pydantic errors without the echoed input (it may be huge or secret)."""
    return [
        {
            "loc": [str(p) for p in e.get("loc", ())],
            "msg": str(e.get("msg", "")).removeprefix("Value error, "),
            "type": e.get("type", ""),
        }
        for e in errors
    ]


def unavailable(what: str, exc: BaseException) -> JSONResponse:
    log.warning("%s unavailable: %s: %s", what, type(exc).__name__, exc)
    return error_response(
        503,
        f"{what}_unavailable",
        f"{what} is unavailable; retry later (nothing was lost)",
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


def allowed_methods(request: Request) -> list[str]:
    """The methods of every route whose path matches the request's (Starlette's 405 names only
    the first route's, where a path like /v1/tenant/retention has a GET and a PUT route)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match in (Match.FULL, Match.PARTIAL) and isinstance(route, BaseRoute):
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        if exc.status in (401, 403, 429):
            state = getattr(request.app.state, "gateway", None)
            if state is not None:
                state.metrics.auth_failures.labels(status=str(exc.status)).inc()
        return error_response(exc.status, exc.code, exc.message, exc.details, exc.headers or None)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = validation_details(exc.errors())
        message = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details) or "invalid request"
        return error_response(422, "invalid_request", message, details)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers) if exc.headers else {}
        if exc.status_code == 405:  # every method the path has, not only its first route's
            headers["Allow"] = ", ".join(allowed_methods(request))
        return error_response(exc.status_code, "http_error", str(exc.detail), headers=headers or None)

    @app.exception_handler(BrokerUnavailableError)
    async def _broker(_: Request, exc: BrokerUnavailableError) -> JSONResponse:
        return unavailable("broker", exc)

    @app.exception_handler(psycopg.OperationalError)
    async def _pg(_: Request, exc: psycopg.OperationalError) -> JSONResponse:
        return unavailable("postgres", exc)

    @app.exception_handler(psycopg_pool.PoolTimeout)
    async def _pool(_: Request, exc: psycopg_pool.PoolTimeout) -> JSONResponse:
        return unavailable("postgres", exc)

    @app.exception_handler(redis.exceptions.ConnectionError)
    async def _redis(_: Request, exc: redis.exceptions.ConnectionError) -> JSONResponse:
        return unavailable("redis", exc)

    @app.exception_handler(redis.exceptions.TimeoutError)
    async def _redis_timeout(_: Request, exc: redis.exceptions.TimeoutError) -> JSONResponse:
        return unavailable("redis", exc)

    @app.exception_handler(psycopg.DataError)
    async def _data(request: Request, exc: psycopg.DataError) -> JSONResponse:
        # A value the store cannot hold (out of range, invalid text) that validation let through.
        log.warning("%s %s: a value the store refused: %s", request.method, request.url.path, exc)
        return error_response(422, "invalid_value", "a value is outside what memstream can store")

    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, _: ClientDisconnect) -> JSONResponse:
        # The client's doing, and nobody is left to answer: one line, not a server failure's
        # traceback (a client that closes mid-body could fill the log with them).
        log.info("%s %s: the client closed the connection before sending its whole request",
                 request.method, request.url.path)  # fmt: skip
        return error_response(400, "client_disconnected", "the connection closed before the whole request arrived")

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        # Logged with its traceback; the caller learns only that it was not their fault.
        named = request_id(request.scope).decode()
        log.error("%s %s failed (request %s)", request.method, request.url.path, named, exc_info=exc)
        return error_response(
            500, "internal_error", f"the gateway failed to answer; the error was logged with request id {named}"
        )

    @app.exception_handler(EmbeddingError)
    async def _embedding(_: Request, exc: EmbeddingError) -> JSONResponse:
        return unavailable("embedder", exc)
