"""A broker that comes back empty is a new log: the worker restarts itself in place.

The embedded broker keeps nothing across a restart (docs/embedded-broker.md). A worker that lives through
one still holds positions and acknowledged offsets of the old log: Faust drops records whose
offsets are below what it read before, its last commit loops on topics that no longer exist,
and the consumer group has to be re-joined on a broker that has never heard of it. Rather
than repair that state piece by piece inside Faust, the worker notices the new broker — every
embedded broker starts with its own cluster id (``ops/stack/broker.py``), and a real
Kafka cluster keeps its id for life — and replaces itself with a fresh copy of the same
command (``os.execv``: same pid, so a supervisor or a test sees one process). The fresh copy
re-creates the topics with their partition counts, joins the group from scratch and reads
the new log from its start.

What the old broker had acknowledged but the worker had not yet written is gone with it:
only a broker that keeps its log (Kafka with replication) can prevent that. See
docs/operations.md, "Faults".
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from memstream.errors import MemstreamError
from memstream.kafka_security import KafkaSecurity

if TYPE_CHECKING:  # annotations only: importing this module does not import Faust
    import faust

log = logging.getLogger(__name__)

#: How often the worker asks the broker who it is (one metadata request).
WATCH_INTERVAL_S = 0.5
CHECK_TIMEOUT_S = 2.0


async def _ask_cluster_id(bootstrap_servers: str, security: KafkaSecurity) -> str:
    watch = BrokerWatch(bootstrap_servers, security=security)
    try:
        return await watch._current()
    finally:
        await watch.close()


def wait_for_cluster_id(bootstrap_servers: str, *, security: KafkaSecurity, timeout_s: float = 120.0) -> str:
    """The broker's cluster id, asked until it answers (a worker may start before its broker)."""
    deadline = time.monotonic() + timeout_s
    delay = 0.2
    while True:
        try:
            return asyncio.run(_ask_cluster_id(bootstrap_servers, security))
        except (KafkaError, OSError, TimeoutError) as exc:
            if time.monotonic() + delay > deadline:
                raise BrokerResetError(
                    f"the broker at {bootstrap_servers} did not say who it is within {timeout_s:g} s: {exc!r}"
                ) from exc
            log.info("waiting for the broker at %s (%s)", bootstrap_servers, type(exc).__name__)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


class BrokerResetError(MemstreamError):
    """The broker could not be identified."""


def restart_in_place() -> None:
    """Replace this process with a fresh run of the same command line."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


class BrokerWatch:
    """Remembers the broker's cluster id and calls ``on_reset`` when a different one answers."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        security: KafkaSecurity,
        on_reset: Callable[[], None] = restart_in_place,
        reaction: str = "restarting this worker in place to re-create the topics and re-join its group from "
        "the start of the new log",
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.security = security
        self.on_reset = on_reset
        #: What ``on_reset`` does, for the log.
        self.reaction = reaction
        self.cluster_id: str | None = None
        self._admin: AIOKafkaAdminClient | None = None

    async def _current(self) -> str:
        if self._admin is None:
            admin = AIOKafkaAdminClient(
                bootstrap_servers=self.bootstrap_servers, request_timeout_ms=2_000, **self.security.client_kwargs()
            )
            await asyncio.wait_for(admin.start(), CHECK_TIMEOUT_S)
            self._admin = admin
        cluster = await asyncio.wait_for(self._admin.describe_cluster(), CHECK_TIMEOUT_S)
        return str(cluster["cluster_id"])

    async def check(self) -> bool:
        """True when the broker answered with the cluster id seen first (or for the first time)."""
        try:
            current = await self._current()
        except (KafkaError, OSError, TimeoutError) as exc:
            log.debug("broker watch: no answer (%s: %s)", type(exc).__name__, exc)
            await self.close()
            return True  # down is not reset: the clients reconnect by themselves
        if self.cluster_id is None:
            self.cluster_id = current
            log.info("broker cluster id %s", current)
            return True
        if current == self.cluster_id:
            return True
        log.error(
            "the broker at %s is a new, empty log (cluster id %s, was %s): %s; what the old broker held and "
            "no worker had yet written is lost with it",
            self.bootstrap_servers, current, self.cluster_id, self.reaction,
        )  # fmt: skip
        await self.close()
        self.on_reset()  # the worker's default never returns; a gateway carries on with the new log
        self.cluster_id = current
        return False

    async def close(self) -> None:
        if self._admin is not None:
            admin, self._admin = self._admin, None
            try:
                await admin.close()
            except (KafkaError, OSError) as exc:
                log.debug("broker watch: closing: %s", exc)


def watch_broker(
    app: faust.App, bootstrap_servers: str, *, security: KafkaSecurity, cluster_id: str | None = None
) -> BrokerWatch:
    """A timer on ``app`` that restarts the worker when the broker turns out to be a new log
    (another than ``cluster_id``, the one the worker joined, when given)."""
    watch = BrokerWatch(bootstrap_servers, security=security)
    watch.cluster_id = cluster_id

    async def check_broker() -> None:
        await watch.check()

    app.timer(interval=WATCH_INTERVAL_S, on_leader=False)(check_broker)
    return watch
