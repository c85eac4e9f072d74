"""Every error answer becomes its own exception class, with the gateway's status, code,
message, request id and details; a request that got no answer is a connection error."""

from __future__ import annotations

import httpx
import pytest

from client_script import failure, ok
from memstream_client import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    MemstreamError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnavailableError,
    UnexpectedResponseError,
    ValidationError,
)

MAPPING = [
    (400, "malformed_json", BadRequestError),
    (401, "unauthorized", AuthenticationError),
    (403, "missing_scope", PermissionDeniedError),
    (404, "not_found", NotFoundError),
    (405, "http_error", BadRequestError),
    (409, "event_id_conflict", ConflictError),
    (413, "payload_too_large", BadRequestError),
    (415, "unsupported_media_type", BadRequestError),
    (422, "invalid_request", ValidationError),
    (429, "rate_limited", RateLimitError),
    (500, "internal_error", InternalServerError),
    (502, "bad_gateway", InternalServerError),
    (503, "broker_unavailable", UnavailableError),
    (504, "gateway_timeout", InternalServerError),
]


@pytest.mark.parametrize(("status", "code", "cls"), MAPPING, ids=[str(m[0]) for m in MAPPING])
def test_each_status_is_its_own_class_with_the_gateways_fields(sync_client, status, code, cls) -> None:
    details = [{"loc": ["query", "k"], "msg": "must be at most 100", "type": "less_than_equal"}]
    answer = failure(status, code, "what went wrong", headers={"X-Request-Id": "req-42"}, details=details)
    client, _ = sync_client(answer, max_retries=0)
    with pytest.raises(cls) as raised:
        client.rules.list()
    error = raised.value
    assert type(error) is cls and isinstance(error, APIStatusError) and isinstance(error, MemstreamError)
    assert (error.status_code, error.code, error.message, error.request_id) == (
        status,
        code,
        "what went wrong",
        "req-42",
    )
    assert error.details == details and error.response.status_code == status
    assert str(error) == f"{status} {code}: what went wrong (request id req-42)"


def test_a_validation_error_lists_each_field(sync_client) -> None:
    details = [
        {"loc": ["turns", "0", "user_id"], "msg": "Field required", "type": "missing"},
        {"loc": ["turns", "1"], "msg": "content is empty", "type": "contract"},
    ]
    client, _ = sync_client(failure(422, "invalid_turn", "2 problems", details=details))
    with pytest.raises(ValidationError) as raised:
        client.turns.publish({"agent_id": "a", "user_id": "u", "session_id": "s", "role": "user", "content": "x"})
    assert raised.value.errors == details


def test_a_rate_limit_says_how_long_to_wait(sync_client) -> None:
    client, _ = sync_client(failure(429, headers={"Retry-After": "2"}), max_retries=0)
    with pytest.raises(RateLimitError) as raised:
        client.rules.list()
    assert raised.value.retry_after == 2.0
    client, _ = sync_client(failure(429), max_retries=0)
    with pytest.raises(RateLimitError) as raised:
        client.rules.list()
    assert raised.value.retry_after is None


def test_an_error_page_that_is_not_the_gateways_shape(sync_client) -> None:
    page = httpx.Response(502, text="<html>Bad Gateway</html>", headers={"content-type": "text/html"})
    client, _ = sync_client(page, max_retries=0)
    with pytest.raises(InternalServerError) as raised:
        client.rules.list()
    assert raised.value.code is None and raised.value.message == "<html>Bad Gateway</html>"
    assert raised.value.request_id is None and raised.value.details == []


def test_no_answer_is_a_connection_error_and_a_timeout_says_so(sync_client) -> None:
    client, _ = sync_client(httpx.ConnectError("connection refused"), max_retries=0)
    with pytest.raises(APIConnectionError) as refused:
        client.rules.list()
    assert not isinstance(refused.value, APITimeoutError)
    assert isinstance(refused.value.__cause__, httpx.ConnectError) and "connection refused" in str(refused.value)
    client, _ = sync_client(httpx.ReadTimeout("timed out"), max_retries=0, timeout_s=2.5)
    with pytest.raises(APITimeoutError) as slow:
        client.rules.list()
    assert isinstance(slow.value, APIConnectionError) and "within 2.5 s" in str(slow.value)


def test_a_success_that_is_not_the_documented_body(sync_client) -> None:
    client, _ = sync_client(ok({"unexpected": True}))
    with pytest.raises(UnexpectedResponseError, match="not a Rules"):
        client.rules.list()
    client, _ = sync_client(httpx.Response(200, text="not json"))
    with pytest.raises(UnexpectedResponseError, match="not JSON"):
        client.rules.list()


async def test_the_async_client_maps_errors_the_same_way(async_client) -> None:
    client, _ = async_client(failure(401, "unauthorized", "unknown API key", headers={"X-Request-Id": "r1"}))
    with pytest.raises(AuthenticationError) as raised:
        await client.rules.list()
    assert (raised.value.status_code, raised.value.code, raised.value.request_id) == (401, "unauthorized", "r1")
    client, _ = async_client(httpx.ConnectTimeout("slow"), max_retries=0)
    with pytest.raises(APITimeoutError):
        await client.rules.list()
