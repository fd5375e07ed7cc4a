"""Where state lives: /var/lib/inferwatch as root, else $XDG_STATE_HOME/inferwatch; the
directory is owner-only (0700) and so are its files (0600)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

SNAPSHOT_FILE = "snapshot.bin"
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
