"""Who may read the embedded stack's data directory: its owner, nobody else.

The data directory holds every tenant's memory (the Postgres cluster, Redis's append-only
file), the services' passwords and their logs. Another local user must not read any of it,
so the directory is 0700, its folders 0700 and its files 0600. Child processes start with
umask 077 (``ManagedProcess``), files we write ourselves are opened 0600, and
``lock_down`` tightens a data directory an older memstream left readable.

When we are root, PostgreSQL runs as a system user that must traverse the data directory
to reach its cluster: the directory then belongs to that user's group with mode 0710
(``grant_traverse``); others still get nothing.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
#: Each process's umask: whatever a child creates is its owner's alone.
UMASK = 0o077

#: Files of ours at the top of the data directory (state, passwords, temporary files).
_OWN_FILES = (
    "stack.json",
    "stack.json.tmp",
    "stack.tmp",
    "postgres-credentials.json",
    "redis-credentials.json",
    ".pg-superuser-pw",
)
#: Folders of ours whose whole tree is private (the Postgres cluster keeps its own modes).
_OWN_TREES = ("logs", "redis")


def private_dir(path: Path) -> Path:
    """Create ``path`` (0700) if missing; an existing one loses every group and other bit."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    _strip(path)
    return path


def lock_down(data_dir: Path) -> None:
    """The data directory, our files in it and the trees we own: no access for group or others."""
    private_dir(data_dir)
    tightened = 0
    for name in _OWN_FILES:
        path = data_dir / name
        if path.is_file() and not path.is_symlink():
            tightened += _strip(path)
    for name in _OWN_TREES:
        if (data_dir / name).is_dir():
            tightened += private_tree(data_dir / name)
    if tightened:
        log.warning("%s: %d files and folders were readable by others; now only by their owner", data_dir, tightened)


def private_tree(root: Path) -> int:
    """``root`` and everything under it: folders 0700 (at most), files 0600 (at most).
    Returns how many were tightened."""
    tightened = int(_strip(root))
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            if not path.is_symlink():
                tightened += _strip(path)
    return tightened


def grant_traverse(path: Path, gid: int) -> None:
    """Let group ``gid`` (and nobody else) pass through ``path``: mode 0710, group ``gid``."""
    st = path.stat()
    if st.st_gid != gid:
        os.chown(path, -1, gid)
    if stat.S_IMODE(st.st_mode) != 0o710:
        path.chmod(0o710)


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, readable by its owner only."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)  # O_EXCL below: never write through a file someone else made
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    tmp.replace(path)


def open_private_log(path: Path) -> IO[bytes]:
    """``path`` opened for appending, created 0600, an existing file tightened to 0600 (a missing
    folder is created 0700; ``lock_down`` tightens the data directory's own ``logs``)."""
    path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, PRIVATE_FILE)
        return os.fdopen(fd, "ab")
    except BaseException:
        os.close(fd)
        raise


def _strip(path: Path) -> bool:
    """Remove every group and other bit of ``path``; True when there were some."""
    mode = stat.S_IMODE(path.lstat().st_mode)
    if not mode & 0o077:
        return False
    path.chmod(mode & ~0o077)
    log.debug("tightened %s to %o", path, mode & ~0o077)
    return True
