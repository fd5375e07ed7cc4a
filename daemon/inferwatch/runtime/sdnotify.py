"""systemd's notification protocol (sd_notify(3)): READY=1, WATCHDOG=1, STOPPING=1, STATUS=…

A datagram to the AF_UNIX socket named by ``NOTIFY_SOCKET`` (``@`` = abstract namespace). Without
the variable every call is a no-op, so the daemon runs the same outside systemd.
"""

from __future__ import annotations

import os
import socket


class Notifier:
    def __init__(self, env: dict[str, str] | None = None) -> None:
        environ = os.environ if env is None else env
        addr = environ.get("NOTIFY_SOCKET", "")
        self._addr: str | None = None
        if addr.startswith("@"):
            self._addr = "\0" + addr[1:]
        elif addr.startswith("/"):
            self._addr = addr
        usec = environ.get("WATCHDOG_USEC", "")
        pid = environ.get("WATCHDOG_PID", "")
        watchdog_on = usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid()))
        self.watchdog_interval: float | None = int(usec) / 2e6 if watchdog_on else None

    @property
    def enabled(self) -> bool:
        return self._addr is not None

    def notify(self, *states: str) -> bool:
        """Send ``states`` (e.g. ``"READY=1"``); False when not under systemd or on error."""
        if self._addr is None:
            return False
        payload = "\n".join(states).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(self._addr)
                sock.sendall(payload)
        except OSError:
            return False
        return True

    def ready(self, status: str = "") -> bool:
        return self.notify("READY=1", *([f"STATUS={status}"] if status else []))

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1")

    def reloading(self) -> bool:
        return self.notify("RELOADING=1")
