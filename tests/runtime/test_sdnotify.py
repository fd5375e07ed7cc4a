from __future__ import annotations

import os
import socket
from pathlib import Path

from inferwatch.runtime.sdnotify import Notifier


def test_without_notify_socket_everything_is_a_noop() -> None:
    n = Notifier(env={})
    assert not n.enabled
    assert not n.ready()
    assert n.watchdog_interval is None


def test_messages_reach_a_real_unix_socket(tmp_path: Path) -> None:
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(str(path))
        server.settimeout(5)
        n = Notifier(env={"NOTIFY_SOCKET": str(path), "WATCHDOG_USEC": "4000000"})
        assert n.enabled
        assert n.watchdog_interval == 2.0
        assert n.ready("serving")
        assert server.recv(4096) == b"READY=1\nSTATUS=serving"
        assert n.watchdog()
        assert server.recv(4096) == b"WATCHDOG=1"
        assert n.reloading()
        assert server.recv(4096) == b"RELOADING=1"
        assert n.stopping()
        assert server.recv(4096) == b"STOPPING=1"


def test_abstract_namespace_socket() -> None:
    name = f"inferwatch-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind("\0" + name)
        server.settimeout(5)
        assert Notifier(env={"NOTIFY_SOCKET": "@" + name}).ready()
        assert server.recv(4096) == b"READY=1"


def test_watchdog_for_another_pid_is_ignored() -> None:
    n = Notifier(env={"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "100", "WATCHDOG_PID": "1"})
    assert n.watchdog_interval is None or os.getpid() == 1


def test_unreachable_socket_is_not_fatal(tmp_path: Path) -> None:
    assert not Notifier(env={"NOTIFY_SOCKET": str(tmp_path / "missing")}).ready()
