"""The real daemon under systemd's notify protocol: a datagram NOTIFY_SOCKET bound here stands
where systemd's would be. READY=1 once it serves, WATCHDOG=1 at WATCHDOG_USEC/2, RELOADING=1
then READY=1 around a SIGHUP reload, STOPPING=1 on SIGTERM. (The Notifier's message format is
tests/runtime/test_sdnotify.py.)"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import wait_until
from integration.daemon_proc import DaemonProc, start_daemon

pytestmark = pytest.mark.integration

WATCHDOG_USEC = 1_000_000  # pings every 0.5 s


class NotifySocket:
    """A bound AF_UNIX datagram socket; a thread keeps every message with its arrival time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.messages: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            with self._lock:
                self.messages.append((time.monotonic(), data.decode()))

    def states(self) -> list[str]:
        with self._lock:
            return [text for _, text in self.messages]

    def times(self, state: str) -> list[float]:
        with self._lock:
            return [at for at, text in self.messages if state in text.splitlines()]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.fixture
def notify(tmp_path: Path) -> Iterator[NotifySocket]:
    path = tmp_path / "notify.sock"
    assert len(str(path)) < 100, "AF_UNIX paths are limited to 108 bytes"
    listener = NotifySocket(path)
    yield listener
    listener.close()


def start(tmp_path: Path, notify: NotifySocket) -> DaemonProc:
    config = tmp_path / "config.yaml"
    config.write_text("kernel: {source: 'off'}\ngpus: {backend: 'off'}\n")
    env = {"NOTIFY_SOCKET": str(notify.path), "WATCHDOG_USEC": str(WATCHDOG_USEC)}
    return start_daemon(tmp_path, "--config", str(config), env=env)


def test_ready_watchdog_reload_and_stopping(tmp_path: Path, notify: NotifySocket) -> None:
    d = start(tmp_path, notify)
    try:
        d.wait_ready()
        wait_until(notify.states, 30, "the first notification")
        first = notify.states()[0].splitlines()
        assert first[0] == "READY=1"  # before any ping: the scheduler runs only after it
        assert first[1] == f"STATUS=serving on 127.0.0.1:{d.port}"

        # The cadence: at least 6 pings come, and never faster than every WATCHDOG_USEC/2.
        wait_until(lambda: len(notify.times("WATCHDOG=1")) >= 6, 30, "6 watchdog pings")
        pings = notify.times("WATCHDOG=1")
        ready_at = notify.times("READY=1")[0]
        interval = WATCHDOG_USEC / 2e6
        assert len(pings) <= (pings[-1] - ready_at) / interval + 2

        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: notify.states().count("READY=1\nSTATUS=reloaded"), 30, "reloaded")
        states = [s.split("\n")[0] for s in notify.states() if s != "WATCHDOG=1"]
        assert states == ["READY=1", "RELOADING=1", "READY=1"]
    finally:
        code, _ = d.terminate()
    assert code == 0
    wait_until(lambda: "STOPPING=1" in notify.states(), 10, "STOPPING=1")
    assert notify.states()[-1] == "STOPPING=1"  # the last word: no ping after it


def test_a_reload_with_a_broken_config_reports_ready_with_the_old_one(
    tmp_path: Path, notify: NotifySocket
) -> None:
    d = start(tmp_path, notify)
    try:
        d.wait_ready()
        (tmp_path / "config.yaml").write_text("kernel: {source: nowhere}\n")
        d.proc.send_signal(signal.SIGHUP)
        wait_until(
            lambda: any("reload failed" in s for s in notify.states()), 30, "the failed reload"
        )
        assert any(s == "RELOADING=1" for s in notify.states())
        assert d.get("/healthz").status_code == 200  # still serving, on the old config
    finally:
        code, _ = d.terminate()
    assert code == 0
    wait_until(lambda: "STOPPING=1" in notify.states(), 10, "STOPPING=1")
