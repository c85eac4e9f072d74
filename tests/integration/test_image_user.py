"""The image's processes run as its unprivileged user and write only in their data directory.

There is no Docker engine here, so the Dockerfile is read (its ENV, USER, ENTRYPOINT and CMD,
and the RUN that makes the data directory) and its entry point is run from this checkout's
virtual environment as an unprivileged user: ``nobody`` when the tests run as root, else the
user running them. It runs in a working directory that user cannot write (the image's /app),
with the image's environment and home, the data directory mapped into a temporary folder, and
services that refuse connections. The worker gets as far as creating its topics (it retries
until Kafka answers), the gateway until it answers /healthz, and the worker's Faust app makes
the directories Faust makes at its first start. A full start needs the services, and an image
build needs Docker: neither is done here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ops.stack.process import free_port

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534
PERMISSION_ERRORS = re.compile(r"Permission denied|PermissionError|Read-only file system|EACCES|EROFS")


@dataclass(frozen=True)
class Image:
    env: dict[str, str]
    user: str
    entrypoint: list[str]
    cmd: list[str]
    runs: list[str]


def read_dockerfile() -> Image:
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    env: dict[str, str] = {}
    user, entrypoint, cmd, runs = "root", [], [], []
    for line in text.splitlines():
        instruction, _, rest = line.strip().partition(" ")
        match instruction.upper():
            case "ENV":
                pairs = dict(re.findall(r"(\w+)=(\S+)", rest)) or dict([rest.split(None, 1)])
                env.update(pairs)
            case "USER":
                user = rest.strip()
            case "ENTRYPOINT":
                entrypoint = json.loads(rest)
            case "CMD":
                cmd = json.loads(rest)
            case "RUN":
                runs.append(rest)
    return Image(env=env, user=user, entrypoint=entrypoint, cmd=cmd, runs=runs)


def test_the_image_runs_unprivileged_with_a_data_directory_of_its_own() -> None:
    image = read_dockerfile()
    data_dir = image.env["MEMSTREAM_DATA_DIR"]
    assert image.user not in ("root", "0") and image.entrypoint == ["memstream"] and image.cmd == ["gateway"]
    assert data_dir.startswith("/") and not data_dir.startswith(("/app", "/tmp")), data_dir
    made = " ".join(image.runs)
    # Made by the build and owned by the user the processes run as; also the user's home.
    assert re.search(rf"install -d -o {image.user} -g {image.user} -m 0700 {data_dir}", made), made
    assert re.search(rf"useradd .*--home-dir {data_dir} {image.user}\b", made), made


@dataclass(frozen=True)
class Sandbox:
    root: Path
    app_dir: Path
    data_dir: Path
    prefix: list[str]
    env: dict[str, str]

    def popen(self, args: list[str]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*self.prefix, *args], cwd=self.app_dir, env=self.env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip


def unprivileged_prefix() -> list[str]:
    if os.geteuid() != 0:
        return []  # already unprivileged
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux): cannot drop to an unprivileged user")
    # CAP_DAC_READ_SEARCH lets nobody read this checkout's interpreter wherever it lives (here,
    # under root's 0700 home); it grants no write anywhere.
    caps = "+dac_read_search"
    probe = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             f"--inh-caps={caps}", f"--ambient-caps={caps}"]  # fmt: skip
    if subprocess.run([*probe, sys.executable, "-c", "pass"], capture_output=True).returncode != 0:
        pytest.skip(f"cannot run this checkout's Python as uid {NOBODY}: {shlex.join(probe)}")
    return probe


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    image = read_dockerfile()
    prefix = unprivileged_prefix()
    app_dir, data_dir = tmp_path / "app", tmp_path / image.env["MEMSTREAM_DATA_DIR"].lstrip("/")
    app_dir.mkdir()
    app_dir.chmod(0o555)  # the image's /app: root's, read-only to the user
    data_dir.mkdir(parents=True)
    data_dir.chmod(0o700)
    for folder in (tmp_path, *data_dir.relative_to(tmp_path).parents):
        (tmp_path / folder).chmod(0o755)
    if prefix:
        os.chown(data_dir, NOBODY, NOBODY)
    closed = f"127.0.0.1:{free_port()}"  # nothing listens: every service refuses
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "PYTHONDONTWRITEBYTECODE": "1",
        **image.env,
        "MEMSTREAM_DATA_DIR": str(data_dir),
        "HOME": str(data_dir),  # the image's user has the data directory as home
        "MEMSTREAM_KAFKA_BOOTSTRAP_SERVERS": closed,
        "MEMSTREAM_DATABASE_URL": f"postgresql://memstream_app:x@{closed}/memstream",
        "MEMSTREAM_REDIS_URL": f"redis://{closed}/0",
        "MEMSTREAM_GATEWAY_PORT": str(free_port()),
        "MEMSTREAM_LOG_LEVEL": "INFO",
    }
    yield Sandbox(tmp_path, app_dir, data_dir, prefix, env)
    app_dir.chmod(0o755)


def stop(process: subprocess.Popen[str]) -> str:
    if process.poll() is None:
        process.terminate()
    try:
        output, _ = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    return output


def written_outside(sandbox: Sandbox) -> list[Path]:
    return [p for p in sandbox.root.rglob("*") if sandbox.data_dir not in (p, *p.parents) and p.is_file()]


def test_the_worker_starts_as_the_images_user(sandbox: Sandbox) -> None:
    image = read_dockerfile()
    worker = sandbox.popen([*image.entrypoint, "worker"])  # docker-compose.yml's worker command
    lines: list[str] = []
    deadline = time.monotonic() + 90
    assert worker.stdout is not None
    try:
        for line in worker.stdout:  # until it waits for Kafka: past settings, the Faust app, metrics
            lines.append(line)
            if "creating topics failed" in line or time.monotonic() > deadline:
                break
    finally:
        lines.append(stop(worker))
    output = "".join(lines)
    assert "creating topics failed" in output, output[-3000:]
    assert not PERMISSION_ERRORS.search(output), output[-3000:]
    assert (sandbox.data_dir / "faust").is_dir()
    assert not written_outside(sandbox)


def test_the_faust_app_makes_its_directories_in_the_data_directory(sandbox: Sandbox) -> None:
    """What the worker's Faust app does at its first start (``App.on_first_start``), as the user."""
    probe = (
        "import asyncio; from memstream.settings import Settings; from streams.app import faust_app; "
        "app = faust_app(Settings(), app_id='memstream'); asyncio.run(app.on_first_start()); "
        "print(app.conf.tabledir)"
    )
    result = sandbox.popen([sys.executable, "-c", probe])
    output, _ = result.communicate(timeout=60)
    assert result.returncode == 0 and not PERMISSION_ERRORS.search(output), output
    tabledir = Path(output.strip().splitlines()[-1])
    assert tabledir.is_dir() and sandbox.data_dir in tabledir.parents, tabledir
    assert not written_outside(sandbox)


def test_the_gateway_starts_as_the_images_user(sandbox: Sandbox) -> None:
    image = read_dockerfile()
    gateway = sandbox.popen([*image.entrypoint, *image.cmd])  # the image's default command
    url = f"http://127.0.0.1:{sandbox.env['MEMSTREAM_GATEWAY_PORT']}/healthz"
    answered = False
    deadline = time.monotonic() + 90
    try:
        while not answered and gateway.poll() is None and time.monotonic() < deadline:
            try:
                answered = httpx.get(url, timeout=2).status_code == 200
            except httpx.HTTPError:
                time.sleep(0.25)
    finally:
        output = stop(gateway)
    assert answered, output[-3000:]
    assert not PERMISSION_ERRORS.search(output), output[-3000:]
    assert not written_outside(sandbox)
