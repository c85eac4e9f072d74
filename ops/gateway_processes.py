"""Several gateway processes on one port, each with its own listening socket.

uvicorn's own ``workers=N`` binds one socket in the parent and hands it to every process:
they share one accept queue, and whichever process wakes first accepts every connection
waiting there (its event loop takes them in a batch). Agents keep their connections open, so
a burst of new ones stays where it landed: 16 clients started together were all on one of
two processes in most runs, which then used one core while the other idled (80-90
searches/s against 150 with the connections split 11 to 5; ``docs/benchmarks.md``).

Here each process binds its own socket with ``SO_REUSEPORT``, and the kernel spreads new
connections over the sockets by a hash of their addresses. The parent holds one more socket
on the address, bound but never listening (it takes no connections): the port stays
memstream's while a process restarts, and an address already in use fails at once, before
any process starts. A process that dies is started again; one that fails while starting
stops the gateway (it would fail the same way again). SIGINT or SIGTERM stops them all.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import sys
import time
from multiprocessing.process import BaseProcess
from typing import Any

log = logging.getLogger(__name__)

#: Exit status of a process that could not start serving (uvicorn's, for the same case).
STARTUP_FAILURE = 3
#: How long a stopping process may take before it is killed.
STOP_GRACE_S = 30.0


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) in the address's ``SO_REUSEPORT`` group, not yet
    listening (uvicorn listens once the app has started: no connection waits on a process
    still importing it)."""
    if not hasattr(socket, "SO_REUSEPORT"):
        raise OSError("several gateway processes need SO_REUSEPORT (Linux, BSD, macOS)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _serve_one(config_options: dict[str, Any], host: str, port: int) -> None:
    """One process: its own listening socket, then uvicorn on it (runs in the child)."""
    import uvicorn

    try:
        sock = reuse_port_socket(host, port)
        server = uvicorn.Server(uvicorn.Config(**config_options))
    except Exception:
        log.exception("a gateway process could not start")
        sys.exit(STARTUP_FAILURE)
    server.run(sockets=[sock])
    if not server.started:
        sys.exit(STARTUP_FAILURE)


class GatewayProcesses:
    """``count`` processes serving ``config_options`` (``uvicorn.Config``'s keywords, the app
    as an import string) on ``host``:``port``; ``run`` returns when they have stopped."""

    def __init__(self, config_options: dict[str, Any], *, host: str, port: int, count: int) -> None:
        self.options = config_options
        self.count = count
        self.holder = reuse_port_socket(host, port)
        self.host, self.port = host, int(self.holder.getsockname()[1])
        self.context = multiprocessing.get_context("spawn")
        self.processes: list[BaseProcess] = []
        self.stopping = False

    def _start(self) -> BaseProcess:
        process = self.context.Process(target=_serve_one, args=(self.options, self.host, self.port), daemon=False)
        process.start()
        return process

    def _stop(self, *_: object) -> None:
        self.stopping = True

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            log.info("gateway on %s:%d in %d processes (one socket each)", self.host, self.port, self.count)
            self.processes = [self._start() for _ in range(self.count)]
            status = 0
            while not self.stopping:
                time.sleep(0.2)
                for i, process in enumerate(self.processes):
                    if process.is_alive() or self.stopping:
                        continue
                    if process.exitcode == STARTUP_FAILURE:
                        log.error("gateway process %s failed to start: stopping the gateway", process.pid)
                        self.stopping, status = True, STARTUP_FAILURE
                        break
                    log.warning("gateway process %s ended (exit %s): starting another", process.pid, process.exitcode)
                    self.processes[i] = self._start()
            return self._stop_all() or status
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.holder.close()

    def _stop_all(self) -> int:
        for process in self.processes:
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)  # uvicorn's graceful shutdown
        deadline = time.monotonic() + STOP_GRACE_S
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                log.warning("gateway process %s did not stop in %.0f s: killed", process.pid, STOP_GRACE_S)
                process.kill()
                process.join()
        return 0
