"""A child process the embedded stack owns: start, wait until ready, stop."""

from __future__ import annotations

import ctypes
import logging
import os
import pwd
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from memstream.errors import StackError
from ops.stack.lockdown import UMASK, open_private_log

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    """Ask the OS for a TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(host: str, port: int, *, timeout_s: float = 0.2) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def as_user(user: str | None) -> dict[str, Any]:
    """Popen arguments that run a child as ``user`` with that user's group only.

    Setting only the uid would leave the child in root's group, and a folder whose
    group is root (mode 0701, say) would then deny it even traversal."""
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _parent_death_hook(sig: signal.Signals) -> Callable[[], None] | None:
    """A preexec hook that asks Linux to send ``sig`` to the child when we die, so that even
    a SIGKILLed ``memstream up`` (or test session) leaves no server running.

    Linux ties this to the *thread* that forked: start children from a long-lived thread
    (the main one), never from a worker thread that may exit first."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved before fork, called after
    pr_set_pdeathsig = 1

    def hook() -> None:
        prctl(pr_set_pdeathsig, int(sig))

    return hook


def wait_for(check: Callable[[], bool], *, what: str, timeout_s: float, interval_s: float = 0.05) -> None:
    """Poll ``check`` until it is true or raise StackError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        if check():
            return
        if time.monotonic() > deadline:
            raise StackError(f"{what} was not ready within {timeout_s:.0f} s")
        time.sleep(interval_s)


@dataclass
class ManagedProcess:
    """One supervised child: its command, where its output goes, how it stops."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    log_path: Path | None = None
    user: str | None = None
    cwd: Path | None = None
    stop_signal: signal.Signals = signal.SIGTERM
    stop_timeout_s: float = 15.0
    #: The child's umask: what it creates (AOF, logs, data) is its owner's alone.
    umask: int = UMASK
    _proc: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log_file: IO[bytes] | None = field(default=None, init=False, repr=False)

    def start(self) -> None:
        if self.running:
            return
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        stdout: IO[bytes] | None = None
        self._close_log()
        if self.log_path is not None:
            self._log_file = open_private_log(self.log_path)  # 0600: logs may quote tenants' data
            stdout = self._log_file
        log.info("starting %s: %s", self.name, " ".join(self.argv))
        try:
            self._proc = subprocess.Popen(
                list(self.argv),
                env=env,
                cwd=self.cwd,
                stdout=stdout,
                stderr=subprocess.STDOUT if stdout is not None else None,
                **as_user(self.user),
                # Its own process group: Ctrl-C reaches the supervisor, which stops
                # children in order instead of every process dying at once.
                start_new_session=True,
                umask=self.umask,
                preexec_fn=_parent_death_hook(self.stop_signal),
            )
        except OSError as exc:
            raise StackError(f"cannot start {self.name} ({self.argv[0]}): {exc}") from exc

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def tail(self, lines: int = 30) -> str:
        """The last lines of this process's log, for error messages."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_bytes()[-16_384:].decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, check: Callable[[], bool], *, timeout_s: float) -> None:
        def ready() -> bool:
            if not self.running:
                raise StackError(
                    f"{self.name} exited with status {self.returncode} while starting"
                    + (f"; its log ends with:\n{self.tail()}" if self.log_path else "")
                )
            return check()

        wait_for(ready, what=self.name, timeout_s=timeout_s)

    def kill(self) -> None:
        """SIGKILL, no goodbye (used by fault-injection tests)."""
        if self._proc is not None and self.running:
            self._proc.kill()
            self._proc.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            log.info("stopping %s (pid %s)", self.name, proc.pid)
            try:
                proc.send_signal(self.stop_signal)
                proc.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop within %.0f s; killing it", self.name, self.stop_timeout_s)
                proc.kill()
                proc.wait()
        self._close_log()
