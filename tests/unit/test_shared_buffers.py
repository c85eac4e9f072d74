"""The embedded Postgres's shared_buffers: a quarter of the machine, within bounds."""

from __future__ import annotations

import pytest

from ops.stack import postgres
from ops.stack.postgres import SHARED_BUFFERS_MAX_MB, SHARED_BUFFERS_MIN_MB, shared_buffers_mb


@pytest.mark.parametrize(
    ("memory_mb", "expected"),
    [(512, SHARED_BUFFERS_MIN_MB), (4096, 1024), (24 * 1024, 6 * 1024), (256 * 1024, SHARED_BUFFERS_MAX_MB)],
)
def test_a_quarter_of_the_machine_within_bounds(monkeypatch: pytest.MonkeyPatch, memory_mb: int, expected: int) -> None:
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": memory_mb * 1024 * 1024 // 4096}
    monkeypatch.setattr(postgres.os, "sysconf", lambda name: pages[name])
    assert shared_buffers_mb() == expected


def test_a_machine_that_does_not_say_gets_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    def unknown(name: str) -> int:
        raise ValueError(name)

    monkeypatch.setattr(postgres.os, "sysconf", unknown)
    assert shared_buffers_mb() == SHARED_BUFFERS_MIN_MB
