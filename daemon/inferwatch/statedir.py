"""Where state lives: /var/lib/inferwatch as root, else $XDG_STATE_HOME/inferwatch; the
directory is owner-only (0700) and so are its files (0600)."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from inferwatch.errors import InferwatchError

SNAPSHOT_FILE = "snapshot.bin"
LOCK_FILE = "lock"
EVENTS_FILE = "events.db"
DIR_MODE = 0o700


def prepare_state_dir(path: Path) -> None:
    """Create ``path`` (0700) or take group/other access away from it. A read-only file system
    is left as it is (the daemon then keeps its state in memory); other errors raise."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        try:
            path.chmod(DIR_MODE)
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EPERM, errno.EACCES):
                raise


def default_state_dir() -> Path:
    if os.geteuid() == 0:
        return Path("/var/lib/inferwatch")
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "inferwatch"


def resolve_state_dir(cli: str | None, configured: Path | None) -> Path:
    if cli:
        return Path(cli)
    if configured is not None:
        return configured
    return default_state_dir()


class StateDirInUse(InferwatchError):
    """Another daemon holds the state directory: two would both read the kernel log, both page,
    and overwrite each other's outbox and snapshot."""


class StateLock:
    """An exclusive ``flock`` on ``<state dir>/lock`` for the life of the process (the kernel
    drops it when the process dies, kill -9 included, so a stale lock never blocks a restart).
    The file holds the owner's pid, for the message the next daemon prints."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def lock_state_dir(path: Path) -> StateLock:
    """Take the state directory for this process; ``StateDirInUse`` when another holds it. On a
    read-only file system there is nothing to protect (the daemon keeps its state in memory)."""
    prepare_state_dir(path)
    lock = path / LOCK_FILE
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return StateLock(None)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise StateDirInUse(
            f"state dir {path} is in use by another inferwatch daemon (pid {holder}); stop it, "
            "or give this one its own --state-dir"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return StateLock(fd)
