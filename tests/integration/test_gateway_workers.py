"""Several gateway processes on one port (``MEMSTREAM_GATEWAY_WORKERS``, ``memstream up
--gateway-workers N``): each runs the whole app (its own pool, limits and header deadline)."""

from __future__ import annotations

import gc
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

import httpx
import psutil

from agents_gateway.app import YOUNG_COLLECTION_EVERY, create_app
from tests.fixtures.stack import RunningStack, serve_gateway, settings_env


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
        # The tokenizer encodes in the request's thread (ops/cli.py, GATEWAY_ENVIRONMENT).
        assert all(w.environ().get("TOKENIZERS_PARALLELISM") == "false" for w in workers)
        # Before any request, each process opened (and primed) its whole pool (gateway_pool_warm).
        deadline = time.monotonic() + 20
        while any(postgres_connections(w, postgres_port) < 3 for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [postgres_connections(w, postgres_port) for w in workers] == [3, 3]
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


def all_listening(workers: list[psutil.Process], port: int) -> bool:
    """Whether every process listens on ``port`` (within 30 s: the first may answer before the
    second has started)."""

    def listening(w: psutil.Process) -> bool:
        return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in w.net_connections("tcp"))

    deadline = time.monotonic() + 30
    while not all(listening(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    return all(listening(w) for w in workers)


def test_connections_opened_together_spread_over_the_processes(stack: RunningStack) -> None:
    """uvicorn's shared socket let the first process to wake accept a whole burst: 16 agents
    that connected together were all served by one process (ops/gateway_processes.py)."""
    with serve_gateway(stack, "gateway-spread", {"MEMSTREAM_GATEWAY_WORKERS": "2"}) as served:
        assert served.process.pid is not None
        workers = [p for p in psutil.Process(served.process.pid).children(recursive=True)
                   if "spawn_main" in " ".join(p.cmdline())]  # fmt: skip
        assert len(workers) == 2
        assert all_listening(workers, served.port), "each process listens on a socket of its own"
        held = [socket.create_connection(("127.0.0.1", served.port), timeout=5) for _ in range(16)]
        try:
            for conn in held:  # every connection answered, and kept open
                conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            for conn in held:
                assert conn.recv(4096).startswith(b"HTTP/1.1 200")
            per_process = [
                sum(1 for c in w.net_connections(kind="tcp") if c.laddr and c.laddr.port == served.port
                    and c.status == psutil.CONN_ESTABLISHED)
                for w in workers
            ]  # fmt: skip
        finally:
            for conn in held:
                conn.close()
        assert sum(per_process) == 16 and min(per_process) >= 1, per_process


def test_a_gateway_process_that_dies_is_replaced_and_a_taken_port_fails_at_once(stack: RunningStack) -> None:
    with serve_gateway(stack, "gateway-restart", {"MEMSTREAM_GATEWAY_WORKERS": "2"}) as served:
        assert served.process.pid is not None
        parent = psutil.Process(served.process.pid)

        def workers() -> set[int]:
            found = set()
            for p in parent.children(recursive=True):
                try:  # the killed one is a zombie until its parent reaps it: not a worker any more
                    if "spawn_main" in " ".join(p.cmdline()):
                        found.add(p.pid)
                except (psutil.ZombieProcess, psutil.NoSuchProcess):
                    continue
            return found

        first = workers()
        assert len(first) == 2 and all_listening([psutil.Process(p) for p in first], served.port)
        victim = min(first)
        psutil.Process(victim).kill()
        deadline = time.monotonic() + 30
        now = workers()  # one reading per check: the victim dies between two (a kill takes a moment)
        while (len(now) != 2 or victim in now) and time.monotonic() < deadline:
            time.sleep(0.2)
            now = workers()
        assert len(now) == 2 and victim not in now, "another process took its place"
        assert all_listening([psutil.Process(p) for p in now], served.port)
        with httpx.Client(base_url=served.url, headers={"connection": "close"}, timeout=10) as client:
            assert all(client.get("/healthz").status_code == 200 for _ in range(10))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**settings_env(stack.settings), "MEMSTREAM_GATEWAY_PORT": str(port), "MEMSTREAM_GATEWAY_WORKERS": "2"}
        done = subprocess.run([sys.executable, "-m", "ops", "gateway"], env=env, capture_output=True, text=True,
                              timeout=60)  # fmt: skip
    assert done.returncode == 1 and f"127.0.0.1:{port}" in done.stderr and "in use" in done.stderr, done.stderr


async def test_a_server_process_freezes_what_starting_made(stack: RunningStack) -> None:
    """``memstream gateway``'s app moves what its start made out of the garbage collector's
    walks (gc.freeze) and collects its young generation less often; an app in someone else's
    process (these tests) leaves the collector alone."""
    gc.unfreeze()
    threshold = gc.get_threshold()
    served = create_app(stack.settings, server_process=True)
    try:
        async with served.router.lifespan_context(served):
            assert gc.get_freeze_count() > 10_000
            assert gc.get_threshold() == (YOUNG_COLLECTION_EVERY, *threshold[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
    embedded = create_app(stack.settings)
    async with embedded.router.lifespan_context(embedded):
        assert gc.get_freeze_count() == 0
        assert gc.get_threshold() == threshold
