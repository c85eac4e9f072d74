"""The gateway's limits: body caps on every endpoint (before authentication, and never read
past), header and body read timeouts, the per-address limit on callers without a valid key,
the auth cache under a flood of unknown keys, the Redis pool under 200 concurrent requests,
and the tenant's rate limit over all its keys."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest
import pytest_asyncio
from fastapi import FastAPI

from agents_gateway.app import create_app
from memstream.settings import Settings
from sinks.redis.keys import rate_limit_key
from tests.fixtures.stack import RunningStack, Served, serve_gateway

MiB = 1024 * 1024
#: What a caller streams at the gateway in the memory test, per request.
FLOOD_BYTES = 200 * MiB
#: Growth of the gateway's resident memory allowed over the whole memory test.
MAX_GROWTH = 50 * MiB
#: The subprocess gateway's read timeouts (short, for the slow-client tests).
READ_TIMEOUT_S = 2.0


# --- a real uvicorn gateway in a subprocess ---------------------------------------------------


@pytest.fixture(scope="module")
def served(stack: RunningStack) -> Iterator[Served]:
    """``python -m ops gateway`` (uvicorn, as deployed) on the test stack, with short read timeouts."""
    timeouts = {
        "MEMSTREAM_BODY_READ_TIMEOUT_S": str(READ_TIMEOUT_S),
        "MEMSTREAM_HEADER_READ_TIMEOUT_S": str(READ_TIMEOUT_S),
    }
    with serve_gateway(stack, "gateway-limits", timeouts) as gateway:
        yield gateway


@dataclass
class Answer:
    status: int | None  # None: the connection ended without a response
    body: bytes
    sent: int  # body bytes the client got to send
    error: str = ""  # why there is no response


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One response (status, body) from a blocking socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        if not more:
            raise ConnectionError(f"closed after {data!r}")
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(body) < length:
        more = sock.recv(65536)
        if not more:
            raise ConnectionError("closed mid-body")
        body += more
    return int(lines[0].split(" ")[1]), body[:length]


def stream_at(
    port: int,
    method: str,
    path: str,
    *,
    headers: dict[str, str],
    total: int,
    chunked: bool,
    chunk_bytes: int = MiB,
    pause_s: float = 0.0,
    timeout_s: float = 60.0,
) -> Answer:
    """Send ``total`` body bytes (Content-Length or chunked) from one thread while reading the
    response in another (as a browser or httpcore does); stop when the gateway answers."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    framing = "transfer-encoding: chunked" if chunked else f"content-length: {total}"
    head = f"{method} {path} HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n{framing}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    sent = 0
    stop = threading.Event()
    chunk = b" " * chunk_bytes  # JSON whitespace: a valid prefix of any document

    def send() -> None:
        nonlocal sent
        with contextlib.suppress(OSError):  # the gateway closed: it stopped reading
            sock.sendall(head.encode())
            while sent < total and not stop.is_set():
                n = min(chunk_bytes, total - sent)
                sock.sendall(f"{n:x}\r\n".encode() + chunk[:n] + b"\r\n" if chunked else chunk[:n])
                sent += n
                if pause_s and stop.wait(pause_s):
                    return
            if chunked:
                sock.sendall(b"0\r\n\r\n")

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        status, body = read_response(sock)
        return Answer(status, body, sent)
    except OSError as exc:
        return Answer(None, b"", sent, repr(exc))
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # unblocks the sender
        sender.join()
        sock.close()


def body_routes(port: int) -> list[tuple[str, str]]:
    """Every (method, path) of the gateway's OpenAPI document that takes a request body, with
    its path parameters filled in."""
    document = httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=10).json()
    routes = []
    for template, operations in sorted(document["paths"].items()):
        for method, operation in sorted(operations.items()):
            if "requestBody" not in operation:
                continue
            path = template
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path":
                    value = str(uuid.UUID(int=1)) if parameter["name"].endswith("_id") else "p1"
                    path = path.replace("{" + parameter["name"] + "}", value)
            routes.append((method.upper(), path))
    return routes


def forget_address(stack: RunningStack, address: str = "127.0.0.1") -> None:
    client = stack.redis()
    try:
        client.delete(rate_limit_key("addr", address))
    finally:
        client.close()


# Pinned examples: every body route x (no key, an unknown key, a valid key) x (Content-Length, chunked).
def test_no_body_over_its_cap_is_read_on_any_endpoint(stack: RunningStack, served: Served, tenant: str) -> None:
    routes = body_routes(served.port)
    assert ("POST", "/v1/turns") in routes and ("POST", "/v1/permissions/evaluate") in routes
    assert len(routes) >= 6, routes
    key = stack.key(tenant)
    callers = {
        "no key": {},
        "unknown key": {"authorization": f"Bearer {unknown_key()}"},
        "valid key": {"authorization": f"Bearer {key}"},
    }
    forget_address(stack)
    # Warm up: every kind of answer once, with a small body, so that growth below is the flood's.
    for auth in ({}, {"authorization": f"Bearer {key}"}):
        for chunked in (False, True):
            stream_at(served.port, "POST", "/v1/permissions/evaluate", headers=auth, total=10, chunked=chunked)
    before = served.rss
    results = []
    for method, path in routes:
        for who, auth in callers.items():
            for chunked in (False, True):
                answer = stream_at(served.port, method, path, headers=auth, total=FLOOD_BYTES, chunked=chunked)
                growth = served.rss - before
                case = (method, path, who, "chunked" if chunked else "content-length")
                results.append((case, answer.status, answer.sent, growth))
                expected = 401 if chunked and who != "valid key" else 413  # a caller unknown is never read
                assert answer.status == expected, (case, answer, results)
                assert growth < MAX_GROWTH, f"{case}: the gateway grew by {growth / MiB:.0f} MiB"
                assert answer.sent < FLOOD_BYTES // 4, (case, answer.sent)
                error = httpx.Response(200, content=answer.body).json()["error"]
                assert set(error) == {"code", "message", "details"}
    print(f"gateway RSS before {before / MiB:.1f} MiB, after {served.rss / MiB:.1f} MiB; cases: {len(results)}")


def test_turns_keep_their_larger_cap(stack: RunningStack, served: Served, tenant: str) -> None:
    key = {"authorization": f"Bearer {stack.key(tenant)}"}
    cap = served.settings.max_body_bytes
    small = 64 * 1024  # max_json_body_bytes, by default
    # Over the JSON cap but under the turns cap: read whole, then refused as JSON (not as too large).
    answer = stream_at(served.port, "POST", "/v1/turns", headers=key, total=small * 2, chunked=True)
    assert answer.status == 400, answer
    answer = stream_at(served.port, "POST", "/v1/turns", headers=key, total=cap + 1, chunked=True)
    assert answer.status == 413, answer
    answer = stream_at(served.port, "POST", "/v1/permissions/evaluate", headers=key, total=small + 1, chunked=True)
    assert answer.status == 413, answer


def test_a_slow_body_gets_408(stack: RunningStack, served: Served, tenant: str) -> None:
    key = {"authorization": f"Bearer {stack.key(tenant)}"}
    started = time.monotonic()
    answer = stream_at(
        served.port, "POST", "/v1/permissions/evaluate", headers=key, total=200, chunked=False, chunk_bytes=10,
        pause_s=0.5, timeout_s=READ_TIMEOUT_S + 8,
    )  # fmt: skip
    assert answer.status == 408, answer
    assert b"request_timeout" in answer.body
    assert time.monotonic() - started < READ_TIMEOUT_S + 3


def test_malformed_http_and_oversized_headers_get_the_error_shape(served: Served) -> None:
    """The protocol layer answered these in text/plain, and headers that arrived in one read
    passed the documented 16 KiB cap."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost gateway\r\n\r\n")  # no colon: not a header
        status, body = read_response(sock)
        assert status == 400 and orjson.loads(body)["error"]["code"] == "malformed_http"
    big = "x" * (served.settings.max_header_bytes + 1_000)
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(f"GET /v1/search HTTP/1.1\r\nhost: gateway\r\nx-big: {big}\r\n\r\n".encode())
        status, body = read_response(sock)
        assert status in (400, 431), status
        assert orjson.loads(body)["error"]["code"] in ("headers_too_large", "malformed_http")


#: A second request, smuggled after the first: a proxy that framed the first by its
#: Content-Length took it for the first one's body; answered, it is a desync.
SMUGGLED = b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n"
#: Request heads whose framing can be read two ways (agents_gateway/framing.py), each followed
#: by a chunked body that ends before SMUGGLED; Content-Length, where given, covers both.
CHUNKED_END = b"0\r\n\r\n"
COVERING = len(CHUNKED_END + SMUGGLED)
AMBIGUOUS_HEADS = {
    "content-length and chunked": f"content-length: {COVERING}\r\ntransfer-encoding: chunked\r\n",
    "chunked and content-length": f"Transfer-Encoding: chunked\r\nContent-Length: {COVERING}\r\n",
    "chunked twice": "transfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n",
    "chunked, chunked": "transfer-encoding: chunked, chunked\r\n",
    "a coding before chunked": "transfer-encoding: gzip, chunked\r\n",
    "obs-fold": "transfer-encoding: chunked\r\nx-note: a\r\n b\r\n",
    "obs-fold of transfer-encoding": "transfer-encoding:\r\n chunked\r\n",
    "space before the colon": "transfer-encoding : chunked\r\n",
    "content-length twice": f"content-length: {COVERING}\r\ncontent-length: {COVERING}\r\n",
    "content-length as a list": f"content-length: {COVERING}, {COVERING}\r\n",
    "an underscore": f"transfer-encoding: chunked\r\ncontent_length: {COVERING}\r\n",
    "a lone LF": "transfer-encoding: chunked\nx-note: a\r\n",
}


def responses_until_closed(sock: socket.socket) -> list[tuple[int, bytes]]:
    """Every response on the connection until the gateway closes it (a timeout if it does not)."""
    data = b""
    while more := sock.recv(65536):
        data += more
    found = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next(
            (int(v) for n, _, v in (line.partition(":") for line in lines) if n.lower() == "content-length"), 0
        )
        found.append((int(lines[0].split(" ")[1]), rest[:length]))
        data = rest[length:]
    return found


def assert_refused_and_closed(port: int, request: bytes) -> None:
    """One 400 in the error shape, then the connection closed: no second response."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        answers = responses_until_closed(sock)
    assert [status for status, _ in answers] == [400], answers
    assert orjson.loads(answers[0][1])["error"]["code"] == "malformed_http", answers


@pytest.mark.parametrize("fields", AMBIGUOUS_HEADS.values(), ids=AMBIGUOUS_HEADS.keys())
def test_a_request_framed_two_ways_is_refused_and_its_connection_closed(served: Served, fields: str) -> None:
    head = f"GET /healthz HTTP/1.1\r\nhost: gateway\r\n{fields}\r\n".encode()
    assert_refused_and_closed(served.port, head + CHUNKED_END + SMUGGLED)


#: Chunked bodies another parser could end elsewhere (framing.StrictChunkedReader), each
#: followed by a request only a parser that ended the body there would answer (404).
LOOSE_BODIES = {
    "a lone LF after the last chunk": b"5\r\nhello\r\n0\r\n\n",
    "a trailer": b"0\r\nx-note: a\r\n\r\n",
    "a lone CR in an extension": b"5;a\rb\r\nhello\r\n0\r\n\r\n",
    "a blank before the line end": b"5 \r\nhello\r\n0\r\n\r\n",
}
NOT_FOUND = b"GET /smuggled-path HTTP/1.1\r\nhost: gateway\r\n\r\n"


@pytest.mark.parametrize("body", LOOSE_BODIES.values(), ids=LOOSE_BODIES.keys())
def test_a_loosely_framed_chunked_body_is_refused_and_its_connection_closed(served: Served, body: bytes) -> None:
    head = b"POST /healthz HTTP/1.1\r\nhost: gateway\r\ntransfer-encoding: chunked\r\n\r\n"
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(head + body + NOT_FOUND)
        answers = responses_until_closed(sock)
    statuses = [status for status, _ in answers]
    # The request's own answer may come first (its route reads no body); then the refusal, and
    # the connection closed: the request after the body is never answered.
    assert statuses[-1] == 400 and 404 not in statuses and len(statuses) <= 2, answers
    assert orjson.loads(answers[-1][1])["error"]["code"] == "malformed_http", answers


def test_transfer_encoding_in_http_1_0_is_refused(served: Served) -> None:
    head = b"GET /healthz HTTP/1.0\r\nhost: gateway\r\ntransfer-encoding: chunked\r\n\r\n"
    assert_refused_and_closed(served.port, head + CHUNKED_END)


def test_a_plain_request_keeps_its_connection(served: Served) -> None:
    """The control: without an ambiguity, the request after a chunked body is answered."""
    head = b"GET /healthz HTTP/1.1\r\nhost: gateway\r\ntransfer-encoding: Chunked\r\n\r\n"
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(
            head + CHUNKED_END + SMUGGLED + b"GET /healthz HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n"
        )
        assert [status for status, _ in responses_until_closed(sock)] == [200, 200, 200]


def test_slow_headers_get_408_and_idle_connections_are_closed(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port), timeout=READ_TIMEOUT_S + 5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n")  # and never the blank line
        status, body = read_response(sock)
        assert status == 408 and b"request_timeout" in body
        assert sock.recv(1) == b"", "the connection is closed"
    with socket.create_connection(("127.0.0.1", served.port), timeout=READ_TIMEOUT_S + 5) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b"", "a connection that sends nothing is closed"
        assert time.monotonic() - started < READ_TIMEOUT_S + 2


# --- the per-address limit, the auth cache, the tenant's limit (in process) -------------------

LIMITED_TENANT = f"t-lim-{uuid.uuid4().hex[:8]}"
#: A second limited tenant (1 request/s, bursts of 4), for a test of its own.
SHARING_TENANT = f"t-share-{uuid.uuid4().hex[:8]}"
ADDR_BURST = 10


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def limited_app(stack: RunningStack) -> AsyncIterator[FastAPI]:
    """A gateway with small limits: 10 failed requests per address (one per 20 s after), 16
    unknown key ids remembered, and LIMITED_TENANT at 1 request/s with bursts of 6."""
    overrides: dict[str, Any] = {
        "addr_rate_limit_per_s": 0.05,
        "auth_cache_s": 60.0,  # the valid key's entry stays fresh through the test
        "addr_rate_limit_burst": ADDR_BURST,
        "auth_negative_cache_size": 16,
        "tenant_rate_limits": (f"{LIMITED_TENANT}=1/6", f"{SHARING_TENANT}=1/4"),
    }
    app = create_app(Settings(**{**stack.settings.model_dump(), **overrides}))
    async with app.router.lifespan_context(app):
        yield app


def client_at(app: FastAPI, address: str, api_key: str | None = None) -> httpx.AsyncClient:
    """A client of the in-process gateway, connecting from ``address``."""
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://gateway", headers=headers)


def some_address() -> str:
    return f"10.{secrets.randbelow(256)}.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"


def unknown_key() -> str:
    return f"msk_{secrets.token_hex(8)}_{secrets.token_urlsafe(32)}"


async def test_unknown_keys_from_one_address_get_429_and_valid_keys_go_on(
    stack: RunningStack, limited_app: FastAPI, tenant: str
) -> None:
    auth = limited_app.state.gateway.auth
    key = stack.key(tenant)
    attacker, user = some_address(), some_address()
    search = {"user_id": "u", "q": "x"}
    async with client_at(limited_app, user, key) as client:
        assert (await client.get("/v1/search", params=search)).status_code == 200
    misses = auth.misses

    statuses = []
    async with client_at(limited_app, attacker) as flood:
        for _ in range(3 * ADDR_BURST):
            response = await flood.post(
                "/v1/permissions/evaluate", json={}, headers={"authorization": f"Bearer {unknown_key()}"}
            )
            statuses.append(response.status_code)
        assert set(statuses) == {401, 429}, statuses
        assert statuses.count(401) <= ADDR_BURST + 1, statuses
        assert statuses[-ADDR_BURST:] == [429] * ADDR_BURST, statuses
        limited = response
        assert int(limited.headers["retry-after"]) >= 1
        assert limited.json()["error"]["code"] == "address_rate_limited"
        # Only the lookups the address could pay for reached Postgres.
        assert auth.misses - misses == statuses.count(401)
        # No key, a malformed one: the same bucket.
        assert (await flood.get("/v1/search", params=search)).status_code == 429
        bad = await flood.get("/v1/search", params=search, headers={"authorization": "Bearer not-a-key"})
        assert bad.status_code == 429

    async with client_at(limited_app, attacker, key) as same_address:  # a valid key from the same address
        assert (await same_address.get("/v1/search", params=search)).status_code == 200
    hits = auth.hits

    # More unknown key ids than the negative cache holds, each from an address of its own:
    # refused, remembered in the small cache only, and the valid key's entry survives.
    for _ in range(40):
        async with client_at(limited_app, some_address(), unknown_key()) as one:
            assert (await one.get("/v1/search", params=search)).status_code == 401
    misses = auth.misses
    async with client_at(limited_app, user, key) as client:
        assert (await client.get("/v1/search", params=search)).status_code == 200
    assert auth.misses == misses, "the valid key was answered from the cache"
    assert auth.hits > hits


async def test_a_tenant_limit_covers_all_its_keys(stack: RunningStack, limited_app: FastAPI, tenant: str) -> None:
    first, second = stack.key(LIMITED_TENANT), stack.key(LIMITED_TENANT)  # each key: 1e6 requests/s
    address = some_address()
    responses = []
    started = time.monotonic()
    async with client_at(limited_app, address, first) as a, client_at(limited_app, address, second) as b:
        for i in range(20):
            client = a if i % 2 == 0 else b
            responses.append(await client.get("/v1/search", params={"user_id": "u", "q": "x"}))
    elapsed = time.monotonic() - started
    ok = [r for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code == 429]
    assert len(ok) + len(refused) == 20, [r.status_code for r in responses]
    assert len(ok) <= 6 + int(elapsed * 1) + 1, (len(ok), elapsed)
    assert refused, "two keys together cannot exceed the tenant's rate"
    error = refused[-1].json()["error"]
    assert error["code"] == "tenant_rate_limited" and "tenant" in error["message"]
    assert int(refused[-1].headers["retry-after"]) >= 1
    # Another tenant is not held back by this one.
    async with client_at(limited_app, address, stack.key(tenant)) as other:
        assert (await other.get("/v1/search", params={"user_id": "u", "q": "x"})).status_code == 200


async def test_a_burst_of_a_new_valid_key_is_not_refused_for_its_address(
    stack: RunningStack, limited_app: FastAPI, tenant: str
) -> None:
    """40 concurrent requests of a key the gateway has not cached yet, from one address whose
    bucket holds 10: one Postgres lookup for all of them, one address token (red team: 160
    of 200 were refused as address_rate_limited)."""
    key = stack.key(tenant)
    auth = limited_app.state.gateway.auth
    misses = auth.misses
    async with client_at(limited_app, some_address(), key) as client:
        responses = await asyncio.gather(
            *(client.get("/v1/search", params={"user_id": "u", "q": "x"}) for _ in range(4 * ADDR_BURST))
        )
    assert [r.status_code for r in responses] == [200] * (4 * ADDR_BURST), [r.text for r in responses][:3]
    assert auth.misses - misses == 1


async def test_a_key_over_its_own_limit_spends_none_of_its_tenants(stack: RunningStack, limited_app: FastAPI) -> None:
    """The key's bucket and the tenant's are taken together or not at all: a runaway agent
    key refused at its own limit does not drain the budget of the tenant's other keys."""
    runaway, other = stack.key(SHARING_TENANT, rate_limit_per_s=1), stack.key(SHARING_TENANT)
    params = {"user_id": "u", "q": "x"}
    async with client_at(limited_app, some_address(), runaway) as a:
        statuses = [(await a.get("/v1/search", params=params)).status_code for _ in range(12)]
    assert statuses[0] == 200 and statuses.count(429) >= 10, statuses
    async with client_at(limited_app, some_address(), other) as b:
        assert [(await b.get("/v1/search", params=params)).status_code for _ in range(3)] == [200] * 3


# --- the Redis pool -------------------------------------------------------------------------


async def test_200_concurrent_requests_do_not_exhaust_the_redis_pool(
    stack: RunningStack, gateway_app: FastAPI, tenant: str
) -> None:
    """200 requests at once, from four keys of a tenant (a key's share of requests in flight is
    64, the tenant's 256): every one is answered, none waits out the Redis pool into a 503."""
    keys = [stack.key(tenant) for _ in range(4)]
    who = {"user_id": "u"}
    transport = httpx.ASGITransport(app=gateway_app, client=(some_address(), 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway", timeout=60) as client:

        async def buffer(i: int) -> httpx.Response:
            auth = {"authorization": f"Bearer {keys[i % len(keys)]}"}
            return await client.get(f"/v1/sessions/s{i}/buffer", params=who, headers=auth)

        for i in range(len(keys)):  # every key is cached
            assert (await buffer(i)).status_code == 200
        responses = await asyncio.gather(*(buffer(i) for i in range(200)))
    statuses = [r.status_code for r in responses]
    assert statuses.count(200) == 200, {s: statuses.count(s) for s in set(statuses)}


def test_slow_bodies_of_one_key_cannot_take_every_connection(stack: RunningStack) -> None:
    """A request whose body arrives slowly holds its connection until the body timeout: the rate
    limits count requests as they start, so one key could hold every connection of the process
    (and every other tenant got 503). Each key and each tenant has a share of requests in flight;
    beyond it, 429 at once, before any body is read; others are served meanwhile."""
    limits = {
        "MEMSTREAM_MAX_IN_FLIGHT_PER_KEY": "3",
        "MEMSTREAM_MAX_IN_FLIGHT_PER_TENANT": "4",
        "MEMSTREAM_BODY_READ_TIMEOUT_S": "60",
    }
    tenant, other = f"t-{uuid.uuid4().hex[:10]}", f"t-{uuid.uuid4().hex[:10]}"
    key_a, key_b, key_other = stack.key(tenant), stack.key(tenant), stack.key(other)
    with serve_gateway(stack, "gateway-in-flight", limits) as gateway:
        held: list[socket.socket] = []

        def hold(key: str) -> None:
            sock = socket.create_connection(("127.0.0.1", gateway.port), timeout=10)
            head = (
                "POST /v1/permissions/evaluate HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
                f"content-length: 1000\r\nauthorization: Bearer {key}\r\n\r\n{{"
            )
            sock.sendall(head.encode())
            held.append(sock)

        def whoami(key: str) -> httpx.Response:
            return httpx.get(f"{gateway.url}/v1/whoami", headers={"authorization": f"Bearer {key}"}, timeout=10)

        try:
            for _ in range(3):
                hold(key_a)
            deadline = time.monotonic() + 10
            while (refused := whoami(key_a)).status_code != 429 and time.monotonic() < deadline:
                time.sleep(0.1)  # until the gateway has read all three heads
            assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_in_flight"
            assert refused.headers["retry-after"] == "1" and "this key" in refused.json()["error"]["message"]
            assert whoami(key_b).status_code == 200  # the tenant's share (4) is not used up
            hold(key_b)
            deadline = time.monotonic() + 10
            while (tenant_full := whoami(key_b)).status_code != 429 and time.monotonic() < deadline:
                time.sleep(0.1)  # until the gateway has read the fourth head
            assert tenant_full.status_code == 429 and "tenant" in tenant_full.json()["error"]["message"]
            assert whoami(key_other).status_code == 200  # another tenant is served all along
        finally:
            for sock in held:
                sock.close()
        deadline = time.monotonic() + 10
        while whoami(key_a).status_code != 200:  # a closed connection gives its place back
            assert time.monotonic() < deadline, "the in-flight count was not given back"
            time.sleep(0.1)


def test_over_the_concurrency_cap_a_request_gets_503_in_the_error_shape(stack: RunningStack) -> None:
    """uvicorn answered it in text/plain, without Retry-After (a red team's finding)."""
    with serve_gateway(stack, "gateway-cap", {"MEMSTREAM_GATEWAY_MAX_CONCURRENCY": "3"}) as gateway:
        idle = [socket.create_connection(("127.0.0.1", gateway.port), timeout=10) for _ in range(3)]
        try:
            with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n")
                data = b""
                while b"\r\n\r\n" not in data:
                    data += sock.recv(65536)
                status, body = read_response_from(sock, data)
            assert status == 503, body
            assert orjson.loads(body)["error"]["code"] == "over_capacity"
            assert b"\r\nretry-after: 1\r\n" in data.lower() and b"application/json" in data.lower()
        finally:
            for conn in idle:
                conn.close()
        deadline = time.monotonic() + 10  # until the idle connections are gone: below the cap again
        while (healthy := httpx.get(f"http://127.0.0.1:{gateway.port}/healthz", timeout=10)).status_code != 200:
            assert time.monotonic() < deadline, healthy.text
            time.sleep(0.1)


def read_response_from(sock: socket.socket, data: bytes) -> tuple[int, bytes]:
    """``read_response`` of a response whose head is already in ``data``."""
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                   if line.lower().startswith(b"content-length:")), 0)  # fmt: skip
    while len(body) < length:
        more = sock.recv(65536)
        if not more:
            break
        body += more
    return int(head.split(b" ")[1]), body[:length]


def test_a_client_that_leaves_mid_body_is_one_line_in_the_log(stack: RunningStack, tenant: str) -> None:
    """Each such request logged a server failure with a 60-line traceback (a red team's
    finding: a client could fill the log). ``serve_gateway`` fails on a traceback in it."""
    with serve_gateway(stack, "gateway-left") as gateway:
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
                sock.sendall(
                    f"POST /v1/turns HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer {stack.key(tenant)}\r\n"
                    "content-type: application/json\r\ncontent-length: 1000\r\n\r\n[".encode()
                )
        deadline = time.monotonic() + 10
        while "before sending its whole request" not in gateway.process.tail(400) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "before sending its whole request" in gateway.process.tail(400)
        assert httpx.get(f"http://127.0.0.1:{gateway.port}/healthz", timeout=10).status_code == 200
