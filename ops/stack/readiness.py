"""Whether a running gateway can serve and its workers consume: the gateway's ``/readyz`` (the
broker, Postgres and Redis answer) and ``/readyz/workers`` for the roles a stack started."""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from streams.heartbeat import WORKER_ROLES, WorkerRole


def not_ready(url: str, *, roles: Sequence[WorkerRole] = WORKER_ROLES, timeout_s: float = 3.0) -> str | None:
    """None when the gateway at ``url`` is ready and every role in ``roles`` has a live worker (and
    none stopped on a code defect); else what is not ready, as the gateway said it."""
    try:
        gateway = httpx.get(f"{url}/readyz", timeout=timeout_s)
        if gateway.status_code != 200:
            return f"/readyz {gateway.status_code}: {gateway.text}"
        if not roles:
            return None
        workers = httpx.get(f"{url}/readyz/workers", params={"role": list(roles)}, timeout=timeout_s)
    except httpx.HTTPError as exc:
        return repr(exc)
    if workers.status_code != 200:
        return f"/readyz/workers {workers.status_code}: {workers.text}"
    return None
