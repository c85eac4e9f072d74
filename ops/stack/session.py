"""Attach to a running ``memstream up``, or start a private embedded stack for one run
(``memstream demo`` and the benchmarks use this)."""

from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from memstream.errors import StackError
from memstream.settings import Settings
from ops.stack.process import free_port
from ops.stack.readiness import not_ready
from ops.stack.state import gateway_url, read_state, with_running_stack
from ops.stack.supervisor import EmbeddedStack
from sinks.postgres.api_keys import create_key
from streams.heartbeat import WORKER_ROLES, WorkerRole

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StackSession:
    settings: Settings
    gateway_url: str
    private: bool
    workers: int


def wait_ready(url: str, *, timeout_s: float = 120.0, roles: Sequence[WorkerRole] = WORKER_ROLES) -> None:
    """Until the gateway at ``url`` is ready and every role in ``roles`` has a live worker."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        why = not_ready(url, roles=roles)
        if why is None:
            return
        last = why
        time.sleep(0.25)
    raise StackError(f"{url} not ready after {timeout_s:.0f} s: {last}")


@contextlib.contextmanager
def stack_session(settings: Settings, *, workers: int = 1, memory: bool = True) -> Iterator[StackSession]:
    """The running stack in ``settings.data_dir`` if there is one, else a private one."""
    if read_state(settings.data_dir) is not None and workers == 1 and memory:
        resolved = with_running_stack(settings)
        url = gateway_url(resolved)
        wait_ready(url)
        yield StackSession(resolved, url, private=False, workers=1)
        return
    with tempfile.TemporaryDirectory(prefix="memstream-run-") as tmp:
        private = Settings(
            **{
                **settings.model_dump(),
                "data_dir": Path(tmp),
                "embedded_broker_port": 0,
                "embedded_postgres_port": 0,
                "embedded_redis_port": 0,
                "gateway_port": free_port(),
                "log_level": "WARNING",
            }
        )
        stack = EmbeddedStack(private)
        try:
            resolved = stack.start_services()
            stack.start_apps(resolved, worker=True, gateway=True, memory=memory, workers=workers, log_to_files=True)
            url = gateway_url(resolved)
            wait_ready(url, roles=WORKER_ROLES if memory else ("ingest",))
            yield StackSession(resolved, url, private=True, workers=workers)
        finally:
            stack.stop()


def issue_key(
    settings: Settings,
    *,
    tenant_id: str,
    scopes: Sequence[str],
    name: str,
    rate_limit_per_s: float | None = None,
) -> str:
    """A fresh API key for ``tenant_id`` (made with the owner role, as `memstream keys create`)."""
    with psycopg.connect(settings.require_owner_database_url(), autocommit=True) as conn:
        return create_key(conn, tenant_id=tenant_id, scopes=scopes, name=name, rate_limit_per_s=rate_limit_per_s)
