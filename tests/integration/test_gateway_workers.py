"""Several gateway processes on one port (``MEMSTREAM_GATEWAY_WORKERS``, ``memstream up
--gateway-workers N``): each runs the whole app (its own pool, limits and header deadline)."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import httpx
import psutil

from tests.fixtures.stack import RunningStack, serve_gateway


def postgres_connections(process: psutil.Process, port: int) -> int:
    return sum(1 for c in process.net_connections(kind="tcp") if c.raddr and c.raddr.port == port)


def test_each_gateway_process_serves_with_its_own_pool_and_limits(stack: RunningStack, tenant: str) -> None:
    key = stack.key(tenant)
    postgres_port = urlsplit(stack.settings.require_database_url()).port
    assert postgres_port is not None
    env = {"MEMSTREAM_GATEWAY_WORKERS": "2", "MEMSTREAM_GATEWAY_POOL_SIZE": "3", "MEMSTREAM_HEADER_READ_TIMEOUT_S": "1"}
    with serve_gateway(stack, "gateway-workers", env) as served:
        assert served.process.pid is not None
        workers = [p for p in psutil.Process(served.process.pid).children(recursive=True)
                   if "spawn_main" in " ".join(p.cmdline())]  # fmt: skip
        assert len(workers) == 2, "two worker processes under the gateway"
        headers = {"authorization": f"Bearer {key}", "connection": "close"}
        with httpx.Client(base_url=served.url, headers=headers, timeout=10) as client:
            for i in range(20):  # a new connection each time: either process may take it
                response = client.get("/v1/search", params={"user_id": "u1", "q": f"anything {i}"})
                assert response.status_code == 200, response.text
        deadline = time.monotonic() + 10
        while not all(postgres_connections(w, postgres_port) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(postgres_connections(w, postgres_port) >= 1 for w in workers), "each process opened its pool"
        assert all(postgres_connections(w, postgres_port) <= 3 for w in workers), "of gateway_pool_size at most"
        # Any process answers a scrape with every process's counters: the same total each time.
        totals = set()
        with httpx.Client(base_url=served.url, headers={"connection": "close"}, timeout=10) as client:
            for _ in range(8):
                text = client.get("/metrics").text
                totals.add(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                               if line.startswith("memstream_gateway_request_seconds_count")
                               and 'route="/v1/search"' in line))  # fmt: skip
        assert totals == {20.0}, totals
        # The header deadline holds in the worker processes too (configured as each app starts).
        with socket.create_connection(("127.0.0.1", served.port), timeout=5) as raw:
            raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            started = time.monotonic()
            answer = raw.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert time.monotonic() - started < 4
