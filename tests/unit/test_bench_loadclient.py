"""The benchmarks' lean HTTP client (``bench/loadclient.py``) against a real socket server that
answers as the gateway can: a length, chunks, a closed connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from bench.loadclient import Connection, ProtocolError

Answer = Callable[[bytes], bytes]


class Server:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self.connections = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(request)
                reply = self.answer(request)
                writer.write(reply)
                await writer.drain()
                if b"Connection: close" in reply or not reply:
                    break
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()


@asynccontextmanager
async def serve(answer: Answer) -> AsyncIterator[tuple[Server, str]]:
    server = Server(answer)
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield server, f"http://127.0.0.1:{port}"
    finally:
        listening.close()
        await listening.wait_closed()


def with_length(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\ncontent-length: {len(body)}\r\n{extra}\r\n".encode() + body


async def test_requests_reuse_one_connection_and_carry_the_headers_and_query() -> None:
    async with serve(lambda _: with_length(b'{"ok": true}')) as (server, url):
        async with Connection(url, {"authorization": "Bearer k1"}) as connection:
            first = await connection.get("/v1/search", {"user_id": "u 1", "q": "dark mode?", "k": 10})
            second = await connection.get("/v1/search")
        assert (first.status, first.body, second.body) == (200, b'{"ok": true}', b'{"ok": true}')
        assert server.connections == 1
        head = server.requests[0].decode()
        assert head.startswith("GET /v1/search?user_id=u+1&q=dark+mode%3F&k=10 HTTP/1.1\r\n")
        assert "\r\nauthorization: Bearer k1\r\n" in head and f"\r\nHost: {url[7:]}\r\n" in head


async def test_a_chunked_answer_is_joined() -> None:
    chunked = (
        b"HTTP/1.1 503 Service Unavailable\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    )
    async with serve(lambda _: chunked) as (_, url):
        async with Connection(url, {}) as connection:
            answers = [await connection.get("/x") for _ in range(2)]
    assert [(a.status, a.body) for a in answers] == [(503, b"hello world")] * 2


async def test_a_connection_the_server_closes_is_opened_again() -> None:
    async with serve(lambda _: with_length(b"bye", extra="Connection: close\r\n")) as (server, url):
        async with Connection(url, {}) as connection:
            bodies = [(await connection.get("/x")).body for _ in range(3)]
    assert bodies == [b"bye"] * 3 and server.connections == 3


async def test_an_answer_it_cannot_read_is_an_error_not_a_hang() -> None:
    async with serve(lambda _: b"HTTP/1.1 200 OK\r\n\r\nno length") as (_, url):
        async with Connection(url, {}) as connection:
            with pytest.raises(ProtocolError, match="without a length"):
                await connection.get("/x")
    async with serve(lambda _: b"") as (_, url):  # closes without a word
        async with Connection(url, {}) as connection:
            with pytest.raises(ProtocolError, match="closed the connection"):
                await connection.get("/x")


def test_only_plain_http_urls() -> None:
    with pytest.raises(ValueError, match="plain http"):
        Connection("https://example.org", {})
