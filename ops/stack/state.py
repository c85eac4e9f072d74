"""``stack.json``: where a running ``memstream up`` can be reached, for the CLI and benches."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_origin

import orjson
from pydantic import SecretStr

from memstream.settings import Settings
from ops.stack.lockdown import write_private

STATE_FILE = "stack.json"


def settings_env(settings: Settings) -> dict[str, str]:
    """Every setting as a ``MEMSTREAM_*`` variable, to hand them to a child process."""
    env: dict[str, str] = {}
    for name in Settings.model_fields:
        value = getattr(settings, name)
        if value is None:
            continue
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        elif isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, tuple | list):
            value = orjson.dumps(list(value)).decode()
        env[f"MEMSTREAM_{name.upper()}"] = str(value)
    return env


def write_state(settings: Settings, *, pid: int, metrics: Mapping[str, str] | None = None) -> Path:
    """``metrics``: each process's Prometheus endpoint, by name (gateway, worker, worker-2, ...)."""
    path = settings.data_dir / STATE_FILE
    data = {
        "pid": pid,
        "gateway_url": gateway_url(settings),
        "metrics": dict(metrics or {}),
        "env": settings_env(settings),
    }
    write_private(path, orjson.dumps(data, option=orjson.OPT_INDENT_2))  # 0600: it holds passwords
    return path


def read_state(data_dir: Path) -> dict[str, Any] | None:
    """The running stack's state, or None when no live ``memstream up`` wrote one."""
    path = data_dir / STATE_FILE
    if not path.exists():
        return None
    data: dict[str, Any] = orjson.loads(path.read_bytes())
    try:
        os.kill(int(data["pid"]), 0)
    except (ProcessLookupError, PermissionError, KeyError, ValueError):
        return None
    return data


def clear_state(data_dir: Path) -> None:
    (data_dir / STATE_FILE).unlink(missing_ok=True)


def gateway_url(settings: Settings) -> str:
    return f"http://{settings.gateway_host}:{settings.gateway_port}"


def with_running_stack(settings: Settings) -> Settings:
    """Fill in service addresses from a running ``memstream up`` in the same data dir;
    variables set in this process's environment win."""
    state = read_state(settings.data_dir)
    if state is None:
        return settings
    updates: dict[str, object] = {}
    for variable, value in state["env"].items():
        name = variable.removeprefix("MEMSTREAM_").lower()
        if variable in os.environ or name not in Settings.model_fields:
            continue
        # Collections travel as JSON, as pydantic-settings reads them from the environment.
        collection = get_origin(Settings.model_fields[name].annotation) in (tuple, list)
        updates[name] = orjson.loads(value) if collection else value
    return Settings(**{**settings.model_dump(), **updates})
