"""Where state lives: /var/lib/inferwatch as root, else $XDG_STATE_HOME/inferwatch."""

from __future__ import annotations

import os
from pathlib import Path

SNAPSHOT_FILE = "snapshot.bin"
EVENTS_FILE = "events.db"


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
