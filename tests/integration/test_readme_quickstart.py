"""The README's quickstart, run from the README itself on the test stack.

The marked blocks (``tests/markdown.py``) are run in order in one bash session, as a reader
would paste them into a second terminal, and each promised output is checked. Three things
differ from a reader's machine, and only these:

- ``make run`` is the test stack (the embedded services, both workers and a real gateway
  process, as ``memstream up`` starts them), so the gateway's address
  ``http://127.0.0.1:8080`` becomes the test gateway's, for curl and (through
  ``MEMSTREAM_BASE_URL``) for the SDK;
- ``--tenant acme`` becomes a fresh tenant, so the test sees nothing of any other;
- ``.venv/bin/memstream`` is this interpreter's ``memstream``, reaching the test stack's
  Postgres through its ``MEMSTREAM_*`` settings (a reader's finds ``memstream up``'s in
  ``.memstream/stack.json``).
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from memstream.settings import Settings
from ops.stack.state import settings_env
from tests.fixtures.stack import RunningStack, Served, WorkerHandle, serve_gateway
from tests.markdown import ROOT, Block, matches, quickstart_blocks

README = ROOT / "README.md"
#: Where ``make run`` serves the gateway (Settings' defaults), as the README writes it.
README_URL = "http://127.0.0.1:8080"
README_TENANT = "--tenant acme"
#: How long an ``eventually`` block may take to print what it promises (the workers catch up).
EVENTUALLY_S = 60.0
BLOCK_TIMEOUT_S = 60.0


class BashSession:
    """One bash process that runs blocks as a reader's terminal would: variables set by one
    block are there for the next."""

    MARK = f"__block_done_{uuid.uuid4().hex}__"

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd = cwd
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.errors: list[str] = []
        assert self.process.stdout is not None and self.process.stderr is not None
        self.pumps = [
            threading.Thread(target=self._pump, args=(self.process.stdout, self.lines.put), daemon=True),
            threading.Thread(target=self._pump, args=(self.process.stderr, self.errors.append), daemon=True),
        ]
        for pump in self.pumps:
            pump.start()
        self.count = 0
        self._send("set -o pipefail")  # a failing curl before a pipe fails the block

    @staticmethod
    def _pump(stream: IO[str], put: Callable[[str], object]) -> None:
        for line in stream:
            put(line)

    def _send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def run(self, script: str, *, suffix: str = ".sh", timeout_s: float = BLOCK_TIMEOUT_S) -> tuple[int, str, str]:
        """(exit status, stdout, stderr) of ``script``, sourced in this session (a Python block:
        run by this interpreter from the session, with its environment)."""
        self.count += 1
        path = self.cwd / f"block-{self.count}{suffix}"
        path.write_text(script)
        errors_before = len(self.errors)
        command = f'"{sys.executable}" {path.name}' if suffix == ".py" else f". ./{path.name}"
        self._send(f"{command} </dev/null; printf '\\n{self.MARK} %d\\n' $?")
        out: list[str] = []
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"block {self.count} did not finish within {timeout_s} s: {''.join(out)}"
                ) from None
            if line.startswith(self.MARK):
                status = int(line.split()[1])
                break
            out.append(line)
        time.sleep(0.05)  # let stderr's reader catch up
        return status, "".join(out), "".join(self.errors[errors_before:])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # bash exits at the end of its input
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for pump in self.pumps:
            pump.join(timeout=5)  # they end at EOF, now that bash is gone
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def reader_env(stack: RunningStack, served: Served, home: Path) -> dict[str, str]:
    env = {
        **settings_env(stack.settings),
        "MEMSTREAM_BASE_URL": served.url,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
    }
    if shutil.which("jq") is None:  # the README pipes through jq; stand in for `jq -r .FIELD`
        shim = home / "bin" / "jq"
        shim.parent.mkdir()
        shim.write_text(
            f'#!/bin/sh\n[ "$1" = -r ] || exit 2\nexec "{sys.executable}" -c '
            '\'import json, sys; print(json.load(sys.stdin)[sys.argv[1].lstrip(".")])\' "$2"\n'
        )
        shim.chmod(0o755)
        env["PATH"] = f"{shim.parent}:{env['PATH']}"
    return env


@pytest.fixture
def reader_dir(tmp_path: Path) -> Path:
    """A reader's checkout as far as the quickstart reaches: ``.venv/bin/memstream``."""
    memstream = tmp_path / ".venv" / "bin" / "memstream"
    memstream.parent.mkdir(parents=True)
    memstream.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ops "$@"\n')
    memstream.chmod(0o755)
    return tmp_path


@pytest.fixture
def served(stack: RunningStack, running_memory_worker: WorkerHandle) -> Iterator[Served]:
    with serve_gateway(stack, "quickstart-gateway") as gateway:
        yield gateway


def adapted(block: Block, *, url: str, tenant: str) -> str:
    return block.body.replace(README_URL, url).replace(README_TENANT, f"--tenant {tenant}")


def test_the_quickstart_runs_as_written(stack: RunningStack, served: Served, reader_dir: Path, tenant: str) -> None:
    blocks = quickstart_blocks(README.read_text())
    assert [b.kind for b in blocks[:1]] == ["stack"] and blocks[0].body.strip() == "make run", blocks[:1]
    steps = blocks[1:]
    assert {b.kind for b in steps} >= {"shell", "eventually", "python"}
    assert all(b.output is not None for b in steps), "every quickstart step promises its output"
    assert any(README_URL in b.body for b in steps) and any(README_TENANT in b.body for b in steps)

    bash = BashSession(reader_dir, reader_env(stack, served, reader_dir))
    try:
        for i, block in enumerate(steps, 1):
            script = adapted(block, url=served.url, tenant=tenant)
            suffix = ".py" if block.kind == "python" else ".sh"
            deadline = time.monotonic() + (EVENTUALLY_S if block.kind == "eventually" else 0)
            while True:
                status, out, err = bash.run(script, suffix=suffix)
                assert block.output is not None
                if status == 0 and matches(block.output, out):
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"quickstart step {i} ({block.kind}) exited {status}\n--- script\n{script}\n"
                        f"--- expected\n{block.output}\n--- got\n{out}\n--- stderr\n{err}"
                    )
                time.sleep(0.5)
            assert not err.strip(), f"quickstart step {i} wrote to stderr:\n{err}"
    finally:
        bash.close()


def test_the_quickstart_addresses_are_what_make_run_serves() -> None:
    """The URL the README uses is the one ``memstream up`` serves by default."""
    defaults = Settings.model_fields
    assert f"http://{defaults['gateway_host'].default}:{defaults['gateway_port'].default}" == README_URL
    makefile = (ROOT / "Makefile").read_text()
    assert "run: $(STAMP)\n\t$(BIN)/memstream up\n" in makefile
