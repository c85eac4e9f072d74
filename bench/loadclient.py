"""A lean HTTP/1.1 GET client for load generation: one keep-alive connection per task.

The benchmarks run the client on the same cores as the stack it measures, so whatever the
client spends is taken from the gateway and Postgres. httpx spent about 2 CPU ms a request
(its transport, its models, its header handling), a tenth of a search's total; this client
writes a prebuilt request and reads a ``Content-Length`` (or chunked) answer, and spends a
fraction of that (``cpu_ms_per_request.client`` in the benchmarks' JSON says how much).
It speaks only what the gateway answers: HTTP/1.1, GET, no TLS, no redirects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlencode, urlsplit


class ProtocolError(RuntimeError):
    """The server's answer is not HTTP/1.1 this client can read."""


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes


class Connection:
    """One keep-alive connection to ``url``'s host; ``get`` sends a request and reads its answer.
    A closed or broken connection is opened again on the next request."""

    def __init__(self, url: str, headers: Mapping[str, str], *, timeout_s: float = 120.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"only plain http:// URLs: {url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.prefix = parts.path.rstrip("/")
        lines = [f"Host: {parts.netloc}", *(f"{k}: {v}" for k, v in headers.items())]
        self._head = ("\r\n".join(lines) + "\r\n\r\n").encode()
        self.timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass

    async def get(self, path: str, params: Mapping[str, str | int] | None = None) -> Response:
        target = self.prefix + path + (f"?{urlencode(params)}" if params else "")
        request = f"GET {target} HTTP/1.1\r\n".encode() + self._head
        try:
            async with asyncio.timeout(self.timeout_s):  # not ``wait_for``: no task a request
                return await self._exchange(request)
        except BaseException:
            await self.close()  # whatever was half read is unusable
            raise

    async def _exchange(self, request: bytes) -> Response:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._reader, self._writer
        assert reader is not None
        writer.write(request)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            raise ProtocolError("the server closed the connection before answering") from exc
        status_line, *header_lines = head[:-4].decode("latin-1").split("\r\n")
        version, _, rest = status_line.partition(" ")
        if not version.startswith("HTTP/1.") or not rest[:3].isdigit():
            raise ProtocolError(f"not an HTTP/1.x status line: {status_line!r}")
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = await _chunks(reader)
        else:
            raise ProtocolError(f"an answer without a length: {headers}")
        if headers.get("connection", "").lower() == "close" or version == "HTTP/1.0":
            await self.close()
        return Response(int(rest[:3]), body)


async def _chunks(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # no trailers from the gateway: the empty line
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
