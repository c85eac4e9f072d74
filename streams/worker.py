"""``memstream worker [--memory]``: run a Faust worker in the foreground until SIGINT/SIGTERM.

Without ``--memory``: ingestion (event log, episodes, buffers) and the audit relay. With it:
long-term memory (facts, graph, skills, summaries, maintenance), in its own consumer group.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any

import faust
from mode import Service

from memstream.settings import Settings
from streams.broker_reset import wait_for_cluster_id

log = logging.getLogger(__name__)

#: Exit status of a worker whose graceful stop did not finish within the grace period.
EXIT_STOP_TIMED_OUT = 75


class BoundedWorker(faust.Worker):
    """A Faust worker whose stop on SIGTERM/SIGINT is bounded: if the graceful stop (commits,
    leaving the group) has not finished within ``stop_grace_s`` — say, its broker and Postgres
    are gone with the ``memstream up`` that started it — it exits anyway. Nothing is lost: what
    it had not committed is delivered again. Without this, orphaned workers waited for their
    dependencies forever, reconnecting in a loop."""

    def __init__(self, *args: Any, stop_grace_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stop_grace_s = stop_grace_s

    def _schedule_shutdown(self, signal: signal.Signals) -> None:
        if not self._signal_stop_time:
            watchdog = threading.Timer(self.stop_grace_s, self._give_up, args=(signal,))
            watchdog.daemon = True
            watchdog.start()
        super()._schedule_shutdown(signal)

    def _give_up(self, signal: signal.Signals) -> None:
        log.error("stopping on %s took more than %g s; exiting without finishing it", signal.name, self.stop_grace_s)
        for handler in logging.getLogger().handlers:
            handler.flush()
        os._exit(EXIT_STOP_TIMED_OUT)


def run_worker(settings: Settings, *, memory: bool = False) -> None:
    app: faust.App
    resources: Service
    # On the embedded broker the consumer group is named after the broker's cluster id, asked
    # once here: a broker back from a restart is a new log (streams/tansu.py, broker_reset.py).
    cluster_id = (
        wait_for_cluster_id(settings.require_kafka(), security=settings.kafka_security())
        if settings.embedded_broker
        else None
    )
    if memory:
        from streams.memory_app import build_memory_app

        memory_pipeline = build_memory_app(settings, cluster_id=cluster_id)
        app, resources = memory_pipeline.app, memory_pipeline.resources
    else:
        from streams.app import build_app

        pipeline = build_app(settings, cluster_id=cluster_id)
        app, resources = pipeline.app, pipeline.resources
    worker = BoundedWorker(
        app, resources, loglevel=settings.log_level, redirect_stdouts=False, quiet=True,
        stop_grace_s=settings.worker_stop_grace_s,
    )  # fmt: skip
    worker.spinner = None  # its terminal escapes would land in whatever reads our stdout
    worker.execute_from_commandline()
