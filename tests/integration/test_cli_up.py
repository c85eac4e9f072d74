"""`memstream up` (what `make run` calls) on a fresh data dir: ready within 60 s, the demo
passes against it, Ctrl-C stops every process it started, and a second `memstream up` on
the same data dir still has the memory (Postgres persists; the broker starts empty)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import psutil
import psycopg

from ops.stack.process import free_port


def wait_ready(up: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """The gateway serves (/readyz) and both worker roles consume (/readyz/workers)."""
    started = time.monotonic()
    while time.monotonic() - started < 60:
        assert up.poll() is None, log.read_text()
        try:
            if all(
                httpx.get(f"{url}{probe}", timeout=2).status_code == 200 for probe in ("/readyz", "/readyz/workers")
            ):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError("not ready within 60 s:\n" + log.read_text()[-3000:])


def scrape_when_up(url: str) -> str:
    """The page at ``url`` once its process serves it (a worker may still be starting)."""
    started = time.monotonic()
    while True:
        try:
            response = httpx.get(url, timeout=2)
        except httpx.HTTPError:
            if time.monotonic() - started > 60:
                raise
            time.sleep(0.5)
            continue
        assert response.status_code == 200, (url, response.text)
        return response.text


def stop(up: subprocess.Popen[bytes]) -> None:
    children = psutil.Process(up.pid).children(recursive=True)
    up.send_signal(signal.SIGINT)
    assert up.wait(timeout=60) == 0
    _, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f"left running: {[p.cmdline() for p in alive]}"


def test_up_demo_ctrl_c_and_restart(tmp_path: Path) -> None:
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
    log_path = tmp_path / "up.log"
    log = log_path.open("wb")
    up = subprocess.Popen([sys.executable, "-m", "ops", "up"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(up, url, log_path)
        state = orjson.loads((tmp_path / "data" / "stack.json").read_bytes())
        assert state["gateway_url"] == url
        # Each process serves /metrics on its own port, recorded in stack.json.
        metrics = state["metrics"]
        assert set(metrics) == {"gateway", "worker", "memory-worker"}
        assert len(set(metrics.values())) == 3
        for name, metrics_url in metrics.items():
            assert "memstream_" in scrape_when_up(metrics_url), name

        demo = subprocess.run(
            [sys.executable, "-m", "ops", "demo", "--gateway", url],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert "recalls the preferences and the project rules" in demo.stdout

        user = re.search(r"of (demo-user-\w+)", demo.stdout)
        assert user is not None

        names = " ".join(" ".join(c.cmdline()) for c in psutil.Process(up.pid).children(recursive=True))
        for part in ("tansu", "postgres", "valkey-server", "ops worker", "ops gateway"):
            assert part in names
        stop(up)
        assert not (tmp_path / "data" / "stack.json").exists()

        # Again from a directory holding files named like modules memstream imports, with two
        # gateway processes: none of memstream's processes (nor theirs) may import them.
        planted = tmp_path / "planted"
        planted.mkdir()
        for module in ("mcp", "fastapi", "psycopg", "uvicorn"):
            (planted / f"{module}.py").write_text("raise SystemExit('planted module imported')\n")
        up = subprocess.Popen([sys.executable, "-P", "-m", "ops", "up", "--gateway-workers", "2"], env=env, stdout=log,
                              stderr=subprocess.STDOUT, cwd=planted)  # fmt: skip
        wait_ready(up, url, log_path)
        # `memstream migrate` against the running stack grants the app role what it needs again.
        owner_url = orjson.loads((tmp_path / "data" / "stack.json").read_bytes())["env"]["MEMSTREAM_DATABASE_OWNER_URL"]
        with psycopg.connect(owner_url, autocommit=True) as conn:
            conn.execute("REVOKE SELECT ON episodes FROM memstream_app")
        migrated = subprocess.run(
            [sys.executable, "-m", "ops", "migrate"], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        created = subprocess.run(
            [sys.executable, "-m", "ops", "keys", "create", "--tenant", "demo", "--scopes", "read"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        key = created.stdout.strip()
        hits = httpx.get(
            f"{url}/v1/search",
            params={"user_id": user[1], "q": "dark mode"},
            headers={"authorization": f"Bearer {key}"},
        ).json()
        assert any("dark mode" in h["content"] for h in hits["hits"]), "memory did not survive the restart"
        workers = [c for c in psutil.Process(up.pid).children(recursive=True) if "spawn_main" in " ".join(c.cmdline())]
        assert len(workers) == 2, "two gateway processes"
        stop(up)
        logs = [p.read_text(errors="replace") for p in tmp_path.rglob("*.log")]
        assert logs and not any("planted module imported" in text for text in logs)
    finally:
        if up.poll() is None:  # a failure above: the whole tree goes, and is reaped (no leak into the next test)
            children = psutil.Process(up.pid).children(recursive=True)
            up.send_signal(signal.SIGINT)
            try:
                up.wait(timeout=60)
            except subprocess.TimeoutExpired:
                up.kill()
                up.wait(timeout=10)
            for child in psutil.wait_procs(children, timeout=10)[1]:
                child.kill()
        log.close()
