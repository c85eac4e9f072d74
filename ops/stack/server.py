"""What every embedded server has in common: a port on 127.0.0.1 it must not steal, one
supervised child process, and a clear way out when the user would rather bring their own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memstream.errors import StackError
from ops.stack.process import ManagedProcess, port_open


class EmbeddedServer:
    #: Name of the process (and of its log file under the stack's log folder).
    name: str
    #: The setting that moves it to another port, and the one that replaces it.
    port_setting: str
    bring_your_own: str

    def __init__(self, *, port: int, log_dir: Path) -> None:
        self.host = "127.0.0.1"
        self.port = port
        self.log_dir = log_dir
        self.process: ManagedProcess | None = None

    def claim_port(self) -> None:
        if port_open(self.host, self.port):
            raise StackError(
                f"port {self.port} is already in use; set MEMSTREAM_{self.port_setting} "
                f"or bring your own with MEMSTREAM_{self.bring_your_own}"
            )

    def launch(self, argv: Sequence[str], *, ready: Callable[[], bool], timeout_s: float, **options: Any) -> None:
        """Start the child (output to ``log_dir/NAME.log``) and wait until ``ready()``."""
        self.process = ManagedProcess(name=self.name, argv=argv, log_path=self.log_dir / f"{self.name}.log", **options)
        self.process.start()
        self.process.wait_ready(ready, timeout_s=timeout_s)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
