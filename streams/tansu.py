"""Narrow client-side workarounds for the embedded Tansu broker, used only when it is in use.

Faust is pointed at ``tansu://host:port`` instead of ``kafka://`` when the embedded
broker runs (``Settings.embedded_broker``); that scheme selects this transport, which
is Faust's aiokafka transport with these changes:

- **Fetch wait.** Tansu holds a fetch request for its whole ``fetch_max_wait_ms`` even
  when records arrive meanwhile (a real Kafka broker answers as soon as
  ``fetch_min_bytes`` are there). Faust hard-codes 1,500 ms, so on Tansu a quiet
  topic delivered each turn 0-1.5 s late (p50 ~390 ms in a raw aiokafka probe, p50
  436 ms end to end at 100 turns/s); 50 ms brings the probe to ~3 ms. See README,
  "The embedded broker".
"""

from __future__ import annotations

from typing import Any

import aiokafka
from faust.transport import drivers
from faust.transport.drivers import aiokafka as faust_aiokafka

SCHEME = "tansu"
FETCH_MAX_WAIT_MS = 50


class TansuConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> aiokafka.AIOKafkaConsumer:
        consumer = super()._create_worker_consumer(transport)
        # aiokafka hands this to its Fetcher in start(); Faust offers no setting for it.
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        return consumer


class TansuConsumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self) -> faust_aiokafka.AIOKafkaConsumerThread:
        return TansuConsumerThread(self, loop=self.loop, beacon=self.beacon)


class TansuTransport(faust_aiokafka.Transport):
    Consumer = TansuConsumer


def register_transport() -> None:
    """Make ``tansu://`` broker URLs resolve to :class:`TansuTransport`; idempotent."""
    drivers.TRANSPORTS.aliases[SCHEME] = f"{__name__}:TansuTransport"
