"""CPU time spent by the stack's processes during a run (Linux ``/proc``; elsewhere nothing).

A benchmark on a small machine is bound by CPU more than by waiting: the requests a second
it reports are what the gateway, Postgres, Redis and the client together could do on its
cores. ``CpuMeter`` says which of them spent it, as CPU milliseconds per request.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

#: Process groups by what their command line holds (first match wins). The embedded Redis is a
#: Valkey server (``ops/stack/redis.py``): until 2026-12-02 its CPU went uncounted.
GROUPS: tuple[tuple[str, str], ...] = (
    ("gateway", "ops gateway"),
    ("postgres", "postgres"),
    ("redis", "valkey-server"),
    ("redis", "redis-server"),
    ("broker", "tansu"),
    ("workers", "ops worker"),
)
_PROC = Path("/proc")


def _group(pid: str) -> str | None:
    if pid == str(os.getpid()):
        return "client"
    try:
        command = (_PROC / pid / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    return next((name for name, marker in GROUPS if marker in command), None)


def _stat(pid: str) -> tuple[str, int] | None:
    """The parent's pid and the CPU ticks so far (user + system) of a process."""
    try:
        fields = (_PROC / pid / "stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[1], int(fields[11]) + int(fields[12])


def snapshot() -> dict[str, tuple[str, int]]:
    """The group and CPU ticks so far of this process and of each of its descendants (the
    stack it started; another stack on the machine is not counted)."""
    if not _PROC.is_dir():
        return {}
    stats = {entry.name: stat for entry in _PROC.iterdir() if entry.name.isdigit() and (stat := _stat(entry.name))}
    mine, out = str(os.getpid()), {}
    for pid, (_, ticks) in stats.items():
        ancestor, hops, group = pid, 0, _group(pid)
        while ancestor not in (mine, "0", "1") and ancestor in stats and hops < 64:
            ancestor, hops = stats[ancestor][0], hops + 1
            if group is None and ancestor != mine:  # e.g. a gateway's worker process: its parent's group
                group = _group(ancestor)
        if ancestor == mine and group:
            out[pid] = (group, ticks)
    return out


@dataclass
class CpuMeter:
    """``start()`` before a run and ``per_request(n)`` after it: CPU ms per request by group
    (a process that exited during the run is not counted; one that started is, from zero)."""

    before: dict[str, tuple[str, int]] = field(default_factory=dict)

    def start(self) -> None:
        self.before = snapshot()

    def per_request(self, requests: int) -> dict[str, float]:
        tick_ms = 1000 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10.0
        spent: dict[str, int] = {}
        for pid, (group, ticks) in snapshot().items():
            spent[group] = spent.get(group, 0) + ticks - self.before.get(pid, (group, 0))[1]
        return {group: round(ticks * tick_ms / max(1, requests), 2) for group, ticks in sorted(spent.items())}
