"""The embedded services are not open to other local users (a shared machine):

- Valkey asks for a password, which no process's command line shows;
- every server listens on 127.0.0.1 only;
- the data directory is its owner's alone (0700; 0710 for PostgreSQL's group when we are
  root), its files 0600 — stack.json, the password files, every log (PostgreSQL's too), the
  AOF — and a data directory an older memstream left readable is tightened on start;
- ``memstream audit export`` writes its file 0600.
"""

from __future__ import annotations

import os
import pwd
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import psutil
import pytest
import redis

from ops.stack.lockdown import lock_down
from ops.stack.postgres import SERVICE_USER, shared_buffers_mb
from ops.stack.process import free_port
from ops.stack.redis import EmbeddedRedis
from ops.stack.state import clear_state, settings_env, write_state
from tests.fixtures.stack import RunningStack, WorkerHandle


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def private(path: Path) -> bool:
    """Nothing for group and others."""
    return mode(path) & 0o077 == 0


def passwords(stack: RunningStack) -> dict[str, str]:
    assert stack.embedded.redis is not None and stack.embedded.postgres is not None
    creds = stack.embedded.postgres.creds
    return {
        "redis": stack.embedded.redis.creds.password,
        "postgres superuser": creds.superuser,
        "postgres owner": creds.owner,
        "postgres app": creds.app,
    }


def server_pids(stack: RunningStack) -> dict[str, int]:
    pids = {}
    for server in (stack.embedded.broker, stack.embedded.postgres, stack.embedded.redis):
        assert server is not None and server.process is not None and server.process.pid is not None
        pids[server.name] = server.process.pid
    return pids


@pytest.fixture
def state_file(stack: RunningStack) -> Iterator[Path]:
    """stack.json as `memstream up` writes it."""
    path = write_state(stack.settings, pid=os.getpid())
    try:
        yield path
    finally:
        clear_state(stack.settings.data_dir)


def test_redis_refuses_a_client_without_the_password(stack: RunningStack) -> None:
    assert stack.embedded.redis is not None
    host, port = stack.embedded.redis.host, stack.embedded.redis.port
    # On the wire, as any local process would try it.
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(b"GET ms:anything\r\nKEYS *\r\n")
        reply = b""
        while reply.count(b"\r\n") < 2:
            chunk = sock.recv(4096)
            assert chunk, reply
            reply += chunk
    assert reply.startswith(b"-NOAUTH"), reply
    assert reply.count(b"-NOAUTH") == 2, reply
    anonymous = redis.Redis(host=host, port=port, socket_timeout=5)
    try:
        with pytest.raises(redis.AuthenticationError, match=r"NOAUTH|authenticated"):
            anonymous.get("ms:anything")
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host=host, port=port, password="guess", socket_timeout=5).ping()
    finally:
        anonymous.close()
    # The URL every memstream process gets carries it.
    url = stack.settings.require_redis_url()
    assert url == f"redis://:{passwords(stack)['redis']}@127.0.0.1:{port}/0"
    client = stack.redis()
    try:
        assert client.ping()
        assert client.config_get("protected-mode") == {"protected-mode": "yes"}
        assert client.config_get("bind") == {"bind": "127.0.0.1"}
    finally:
        client.close()


def test_no_password_is_on_a_command_line_or_in_a_log(stack: RunningStack, running_worker: WorkerHandle) -> None:
    """/proc/<pid>/cmdline is readable by every local user; logs must not quote secrets either.
    The worker, a real subprocess, reached Redis with the password from its environment."""
    secrets = passwords(stack)
    assert all(len(p) >= 20 for p in secrets.values())
    seen = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue  # gone meanwhile
        seen += 1
        for what, password in secrets.items():
            assert password not in cmdline, f"the {what} password is on the command line of pid {proc.name}"
    assert seen > 5
    running = set(psutil.pids())
    assert set(server_pids(stack).values()) <= running and running_worker.process.pid in running
    for log in (stack.settings.data_dir / "logs").glob("*.log"):
        text = log.read_text("utf-8", "replace")
        for what, password in secrets.items():
            assert password not in text, f"the {what} password is in {log.name}"


def test_servers_listen_on_loopback_only(stack: RunningStack) -> None:
    for name, pid in server_pids(stack).items():
        listening = [
            c.laddr for c in psutil.Process(pid).net_connections(kind="inet") if c.status == psutil.CONN_LISTEN
        ]
        assert listening, name
        assert {addr.ip for addr in listening} == {"127.0.0.1"}, (name, listening)


def test_data_dir_and_its_files_are_the_owners_alone(stack: RunningStack, state_file: Path) -> None:
    data = stack.settings.data_dir
    # 0700; as root PostgreSQL runs as a system user whose group may only pass through (0710).
    if os.geteuid() == 0:
        assert mode(data) == 0o710, oct(mode(data))
        assert data.stat().st_gid == pwd.getpwnam(SERVICE_USER).pw_gid
    else:
        assert mode(data) == 0o700, oct(mode(data))
    assert mode(data / "postgres") == 0o700

    files = [state_file, data / "postgres-credentials.json", data / "redis-credentials.json"]
    logs = sorted((data / "logs").glob("*.log"))
    assert {p.name for p in logs} >= {"broker.log", "postgres.log", "redis.log"}
    redis_tree = [data / "redis", *sorted((data / "redis").rglob("*"))]
    aof = [p for p in redis_tree if ".aof" in p.name]
    assert aof, "no append-only file"
    assert data / "redis" / "valkey.conf" in redis_tree
    for path in [*files, data / "logs", *logs, *redis_tree]:
        assert private(path), f"{path} is {oct(mode(path))}"
        assert path.stat().st_uid == os.geteuid(), path
    # The PostgreSQL server's own output (written by the service user when we are root).
    assert mode(data / "logs" / "postgres.log") == 0o600


def test_a_data_dir_left_open_by_an_older_version_is_tightened(tmp_path: Path) -> None:
    """What an older memstream left (0755 folders, 0644 files, under umask 022), then a real
    Valkey started on it: everything is the owner's alone, the AOF Valkey writes too."""
    data = tmp_path / "data"
    old_umask = os.umask(0o022)
    try:
        for folder in (data / "logs", data / "redis" / "appendonlydir"):
            folder.mkdir(parents=True)
        for name in ("stack.json", "postgres-credentials.json", "logs/redis.log", "redis/appendonlydir/x.aof"):
            (data / name).write_bytes(b"{}")
        (data / "postgres-credentials.json").write_bytes(orjson.dumps({"superuser": "a", "owner": "b", "app": "c"}))
        assert mode(data) == 0o755 and mode(data / "stack.json") == 0o644

        lock_down(data)
        server = EmbeddedRedis(data, port=free_port(), log_dir=data / "logs")
        server.start()
        try:
            client = redis.Redis.from_url(server.url)
            client.set("k", "v")
            client.close()
        finally:
            server.stop()
    finally:
        os.umask(old_umask)
    everything = [data, *data.rglob("*")]
    assert any(p.name.endswith(".aof") and p.name != "x.aof" for p in everything)
    for path in everything:
        assert private(path), f"{path} is {oct(mode(path))}"

    # The same password on the next start of the same data dir.
    assert EmbeddedRedis(data, port=free_port(), log_dir=data / "logs").creds == server.creds


def test_audit_export_file_is_private(stack: RunningStack, api_key: str, tenant: str, tmp_path: Path) -> None:
    """Run as `memstream audit export` (a subprocess, under the usual umask 022), onto a new
    file and over an existing world-readable one."""
    existing = tmp_path / "existing.jsonl"
    existing.write_bytes(b"old\n")
    existing.chmod(0o644)
    for out, fmt in ((tmp_path / "audit.avro", "avro"), (tmp_path / "audit.jsonl", "jsonl"), (existing, "jsonl")):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ops",
                "audit",
                "export",
                "--tenant",
                tenant,
                "--format",
                fmt,
                "--out",
                str(out),
            ],
            env={**os.environ, **settings_env(stack.settings)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            umask=0o022,
        )
        assert done.returncode == 0, done.stderr
        assert "wrote 1 audit records" in done.stderr, done.stderr  # the key's creation
        assert mode(out) == 0o600, (out.name, oct(mode(out)))
    assert b"api_key.create" in existing.read_bytes()


def test_the_embedded_postgres_buffers_follow_the_machine(stack: RunningStack) -> None:
    """A quarter of the machine's memory unless the settings name a size (the test stack does not)."""
    assert stack.settings.embedded_postgres_shared_buffers_mb == 0
    with stack.superuser_db() as conn:
        row = conn.execute(
            "SELECT setting::bigint * 8 / 1024 FROM pg_settings WHERE name = 'shared_buffers'"
        ).fetchone()
    assert row is not None
    value = row[0]
    assert value == shared_buffers_mb()
