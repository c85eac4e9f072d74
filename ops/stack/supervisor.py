"""``memstream up``: start what the user did not bring, then the worker and the gateway.

Runs in the foreground. Ctrl-C (or SIGTERM) stops the gateway, the worker, Redis,
Postgres and the broker, in that order. A worker or gateway that dies is restarted
with backoff; a dead infrastructure process stops the whole stack with an error.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType

from memstream.embedder.factory import embedding_identity
from memstream.errors import StackError
from memstream.settings import ConfigurationError, Settings
from ops.stack.broker import EmbeddedBroker
from ops.stack.lockdown import UMASK, lock_down
from ops.stack.postgres import APP_ROLE, EmbeddedPostgres, shared_buffers_mb
from ops.stack.process import ManagedProcess, free_port
from ops.stack.readiness import not_ready
from ops.stack.redis import EmbeddedRedis
from ops.stack.state import clear_state, gateway_url, settings_env, write_state
from sinks.postgres.migrate import apply_migrations
from sinks.postgres.vector_index import ensure_vector_index
from streams.defects import EXIT_DEFECT
from streams.heartbeat import WorkerRole
from streams.topics import ensure_topics

log = logging.getLogger(__name__)

MAX_RESTARTS = 5
RESTART_WINDOW_S = 300.0


@dataclass
class _Supervised:
    process: ManagedProcess
    restarts: list[float] = field(default_factory=list)


class EmbeddedStack:
    """The embedded services plus (optionally) the worker and gateway processes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.log_dir = settings.data_dir / "logs"
        self.broker: EmbeddedBroker | None = None
        self.postgres: EmbeddedPostgres | None = None
        self.redis: EmbeddedRedis | None = None
        self.apps: dict[str, _Supervised] = {}
        #: Where each process serves Prometheus metrics (recorded in stack.json).
        self.metrics_urls: dict[str, str] = {}

    # -- infrastructure ----------------------------------------------------------------
    def start_services(self) -> Settings:
        """Start missing services, migrate, create topics; returns the resolved settings."""
        s = self.settings
        lock_down(s.data_dir)  # 0700, files 0600: also a data dir an older memstream left open
        updates: dict[str, object] = {}
        if not s.kafka_bootstrap_servers:
            if s.kafka_security_protocol != "PLAINTEXT":
                raise ConfigurationError(
                    f"MEMSTREAM_KAFKA_SECURITY_PROTOCOL={s.kafka_security_protocol} needs your own Kafka: set "
                    "MEMSTREAM_KAFKA_BOOTSTRAP_SERVERS (the embedded broker speaks PLAINTEXT only)"
                )
            self.broker = EmbeddedBroker(port=s.embedded_broker_port or free_port(), log_dir=self.log_dir)
            self.broker.start()
            updates |= {
                "kafka_bootstrap_servers": self.broker.bootstrap_servers,
                "embedded_broker": True,
            }
        if s.database_url is None:
            self.postgres = EmbeddedPostgres(
                s.data_dir, port=s.embedded_postgres_port or free_port(), log_dir=self.log_dir,
                shared_buffers_mb=s.embedded_postgres_shared_buffers_mb or shared_buffers_mb(),
            )  # fmt: skip
            self.postgres.start()
            updates |= {
                "database_url": self.postgres.app_url,
                "database_owner_url": self.postgres.owner_url,
                # In the stack's state too: `memstream migrate` against it grants to this role.
                "database_app_role": APP_ROLE,
            }
        if s.redis_url is None:
            self.redis = EmbeddedRedis(s.data_dir, port=s.embedded_redis_port or free_port(), log_dir=self.log_dir)
            self.redis.start()
            updates["redis_url"] = self.redis.url
        resolved = Settings(**{**s.model_dump(), **updates})
        prepare_storage(resolved, app_role=resolved.database_app_role)
        return resolved

    # -- worker and gateway -------------------------------------------------------------
    def start_apps(
        self,
        resolved: Settings,
        *,
        worker: bool = True,
        gateway: bool = True,
        memory: bool = True,
        workers: int = 1,
        log_to_files: bool = False,
    ) -> None:
        """Start the ingest worker(s), the long-term memory worker and the gateway; their
        output goes to this terminal, or to ``data_dir/logs/NAME.log`` with ``log_to_files``."""
        env = settings_env(resolved)
        if gateway:
            self.metrics_urls["gateway"] = f"{gateway_url(resolved)}/metrics"
        commands: dict[str, list[str]] = {}
        if worker:
            for i in range(1, workers + 1):
                commands[f"worker-{i}" if i > 1 else "worker"] = ["worker"]
        if memory:
            commands["memory-worker"] = ["worker", "--memory"]
        if gateway:
            commands["gateway"] = ["gateway"]
        workers_seen = 0
        for name, command in commands.items():
            own_env = env
            if command[0] == "worker" and (port := worker_metrics_port(resolved, workers_seen)) is not None:
                own_env = {**env, "MEMSTREAM_WORKER_METRICS_PORT": str(port)}
                self.metrics_urls[name] = f"http://{resolved.worker_metrics_host}:{port}/metrics"
                workers_seen += 1
            process = ManagedProcess(
                name=name,
                # -P: not the working directory first on sys.path ("python -m" puts it there),
                # so a file there named like a module memstream imports (mcp.py, fastapi.py)
                # is never run by memstream's processes (nor by the ones they spawn).
                argv=[sys.executable, "-P", "-m", "ops", *command],
                env=own_env,
                log_path=self.log_dir / f"{name}.log" if log_to_files else None,
                stop_timeout_s=20.0,
            )
            process.start()
            self.apps[name] = _Supervised(process)

    def supervise(self) -> None:
        """Restart a dead worker/gateway (with backoff); raise if infrastructure died."""
        for component in (self.broker, self.postgres, self.redis):
            if component is not None and component.process is not None and not component.process.running:
                raise StackError(
                    f"{component.process.name} exited with status {component.process.returncode}; "
                    f"its log ends with:\n{component.process.tail()}"
                )
        now = time.monotonic()
        for name, app in self.apps.items():
            if app.process.running:
                continue
            app.restarts = [t for t in app.restarts if now - t < RESTART_WINDOW_S]
            if len(app.restarts) >= MAX_RESTARTS:
                raise StackError(f"{name} died {MAX_RESTARTS} times in {RESTART_WINDOW_S:.0f} s; giving up")
            delay = 2 ** len(app.restarts)
            log.error("%s exited with status %s%s; restarting in %d s", name, app.process.returncode,
                      _why(app.process), delay)  # fmt: skip
            time.sleep(delay)
            app.restarts.append(time.monotonic())
            app.process.start()

    def stop(self) -> None:
        for app in reversed(list(self.apps.values())):
            _quietly(app.process.stop)
        for component in (self.redis, self.postgres, self.broker):
            if component is not None:
                _quietly(component.stop)


def _why(process: ManagedProcess) -> str:
    """What a worker's exit status means, with the line of its log that says so."""
    if process.returncode == EXIT_DEFECT:
        said = [line for line in process.tail(400).splitlines() if "code defect in" in line]
        return " (a code defect" + (f": {said[-1].strip()}" if said else "; see its log") + ")"
    return ""


def worker_metrics_port(settings: Settings, index: int) -> int | None:
    """The /metrics port of the ``index``-th worker process on this machine: none when metrics are
    off (-1), a free port each when it is 0, else consecutive ports from the one configured, so
    two or three workers never collide. A restarted worker keeps its port."""
    if settings.worker_metrics_port < 0:
        return None
    if settings.worker_metrics_port == 0:
        return free_port(settings.worker_metrics_host)
    return settings.worker_metrics_port + index


def _quietly(stop: object) -> None:
    try:
        stop()  # type: ignore[operator]
    except (OSError, StackError):
        log.exception("error while stopping")


def prepare_storage(settings: Settings, *, app_role: str | None) -> None:
    """Migrations, the vector index and topics: everything the worker and gateway expect."""
    applied = apply_migrations(settings.require_owner_database_url(), app_role=app_role)
    if applied:
        log.info("applied migrations %s", applied)
    model, dim = embedding_identity(settings)
    ensure_vector_index(
        settings.require_owner_database_url(), strategy=settings.vector_index, model=model, dim=dim,
        min_episodes=settings.hnsw_min_episodes,
    )  # fmt: skip
    asyncio.run(
        ensure_topics(
            settings.require_kafka(),
            security=settings.kafka_security(),
            partitions=settings.topic_partitions,
            replication_factor=settings.topic_replication_factor,
        )
    )


def _wait_ready(url: str, roles: Sequence[WorkerRole], stop: threading.Event, timeout_s: float = 120.0) -> None:
    """Say when the gateway is ready and a worker of each role started consumes (or what is not)."""
    started = time.monotonic()
    why: str | None = "no answer yet"
    while not stop.is_set() and time.monotonic() - started < timeout_s:
        why = not_ready(url, roles=roles)
        if why is None:
            log.info("memstream is ready at %s (%.1f s)", url, time.monotonic() - started)
            return
        stop.wait(0.5)
    if not stop.is_set():
        log.warning("%s is not ready after %.0f s (%s); see the logs above", url, timeout_s, why)


def run_up(settings: Settings, *, worker: bool = True, gateway: bool = True) -> int:
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s; stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    os.umask(UMASK)  # whatever this process or its children create is the owner's alone
    stack = EmbeddedStack(settings)
    try:
        resolved = stack.start_services()
        stack.start_apps(resolved, worker=worker, gateway=gateway)
        write_state(resolved, pid=os.getpid(), metrics=stack.metrics_urls)
        log.info(
            "stack up: kafka=%s postgres=%s redis=%s data=%s",
            resolved.kafka_bootstrap_servers,
            "embedded" if stack.postgres else "external",
            "embedded" if stack.redis else "external",
            resolved.data_dir,
        )
        if stack.metrics_urls:
            log.info("metrics: %s", " ".join(f"{name}={url}" for name, url in stack.metrics_urls.items()))
        if gateway:
            roles: tuple[WorkerRole, ...] = ("ingest", "memory") if worker else ("memory",)  # start_apps' roles
            threading.Thread(target=_wait_ready, args=(gateway_url(resolved), roles, stop), daemon=True).start()
        while not stop.wait(0.5):
            stack.supervise()
        return 0
    except StackError as exc:
        log.error("%s", exc)
        return 1
    finally:
        clear_state(settings.data_dir)
        stack.stop()
