"""Which group the benchmarks' CPU meter (``bench/cpu.py``) counts a child process in, from the
command line of a real process this test starts."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from bench.cpu import snapshot

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@contextmanager
def child(*words: str) -> Iterator[subprocess.Popen[bytes]]:
    """A sleeping child whose command line ends with ``words`` (what the meter matches)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *words])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("server", ["valkey-server", "redis-server"])
def test_the_embedded_valkey_and_a_redis_server_count_as_redis(server: str) -> None:
    with child(server, "/tmp/valkey.conf") as process:
        assert snapshot()[str(process.pid)][0] == "redis"


def test_a_process_of_no_group_is_not_counted() -> None:
    with child("something-else") as process:
        assert str(process.pid) not in snapshot()
