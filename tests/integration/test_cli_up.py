"""`memstream up` (what `make run` calls) on a fresh data dir: ready within 60 s, the demo
passes against it, and Ctrl-C stops every process it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import psutil

from memstream.stack.process import free_port


def test_up_demo_and_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "MEMSTREAM_DATA_DIR": str(tmp_path / "data"),
        "MEMSTREAM_GATEWAY_PORT": str(port),
        "MEMSTREAM_EMBEDDED_BROKER_PORT": "0",
        "MEMSTREAM_EMBEDDED_POSTGRES_PORT": "0",
        "MEMSTREAM_EMBEDDED_REDIS_PORT": "0",
        "MEMSTREAM_BROKER_SESSION_TIMEOUT_S": "4",
        "MEMSTREAM_BROKER_HEARTBEAT_INTERVAL_S": "1",
    }
    log = (tmp_path / "up.log").open("wb")
    up = subprocess.Popen(
        [sys.executable, "-m", "memstream", "up"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        ready = False
        while time.monotonic() - started < 60 and not ready:
            assert up.poll() is None, (tmp_path / "up.log").read_text()
            try:
                ready = httpx.get(f"{url}/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        assert ready, "not ready within 60 s:\n" + (tmp_path / "up.log").read_text()[-3000:]
        state = orjson.loads((tmp_path / "data" / "stack.json").read_bytes())
        assert state["gateway_url"] == url

        demo = subprocess.run(
            [sys.executable, "-m", "memstream", "demo", "--gateway", url],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert "recalls the preferences and the project rules" in demo.stdout

        children = psutil.Process(up.pid).children(recursive=True)
        names = " ".join(" ".join(c.cmdline()) for c in children)
        for part in ("tansu", "postgres", "valkey-server", "memstream worker", "memstream gateway"):
            assert part in names
        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=60) == 0
        _, alive = psutil.wait_procs(children, timeout=10)
        assert not alive, f"left running: {[p.cmdline() for p in alive]}"
        assert not (tmp_path / "data" / "stack.json").exists()
    finally:
        if up.poll() is None:
            up.kill()
        log.close()
