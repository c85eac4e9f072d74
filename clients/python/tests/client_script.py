"""A scripted transport for the client tests: each request gets the next scripted answer (a
response, or an httpx error to raise), and every request is recorded."""

from __future__ import annotations

import json
from typing import Any

import httpx

KEY = "msk_0123456789abcdef_secretsecretsecretsecret"
BASE_URL = "http://memstream.test"

Answer = httpx.Response | httpx.TransportError


class Script:
    """A ``MockTransport`` handler answering from a list, in order."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self.answers:
            raise AssertionError(f"no answer scripted for request {len(self.requests)}: {request.method} {request.url}")
        answer = self.answers.pop(0)
        if isinstance(answer, httpx.TransportError):
            raise type(answer)(str(answer), request=request)
        return answer

    def bodies(self) -> list[Any]:
        return [json.loads(r.content) for r in self.requests]


def ok(body: Any = None, *, status: int = 200, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json=body if body is not None else {}, headers=headers)


def failure(
    status: int,
    code: str = "some_code",
    message: str = "it failed",
    *,
    headers: dict[str, str] | None = None,
    details: list[dict[str, Any]] | None = None,
) -> httpx.Response:
    """An answer in the gateway's error shape."""
    body = {"error": {"code": code, "message": message, "details": details or []}}
    return httpx.Response(status, json=body, headers=headers)
