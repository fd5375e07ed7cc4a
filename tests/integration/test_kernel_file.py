"""kernel.source: file — a saved kern.log followed through the tailer, faults counted once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import wait_until
from integration.daemon_proc import start_daemon
from integration.test_kernel_e2e import xid_count, xid_events

pytestmark = pytest.mark.integration

# A syslog-format kern.log line stamped now (local time, no year, as rsyslog writes it): an old
# date would be pruned from the 14-day event log.
NOW = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
LINE = (
    f"{NOW} hyperion kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, "
    "GPU has fallen off the bus.\n"
)


def test_kern_log_file_is_followed_and_restarts_do_not_recount(tmp_path: Path) -> None:
    kern = tmp_path / "kern.log"
    kern.write_text(f"{NOW} hyperion kernel: usb 1-1: new device\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"gpus:\n  backend: 'off'\nkernel:\n  source: file\n  path: {kern}\n")
    state = tmp_path / "state"
    bus = "0000:3b:00.0"
    d = start_daemon(tmp_path, "--config", str(config), state_dir=state)
    try:
        d.wait_ready()
        with kern.open("a") as fh:
            fh.write(LINE)
        wait_until(lambda: xid_count(d, bus) == 1, 30, "the Xid from kern.log")
        assert len(xid_events(d, bus)) == 1
    finally:
        code, _ = d.terminate()
    assert code == 0
    with kern.open("a") as fh:  # written while the daemon is down
        fh.write(LINE.replace("pid=1234", "pid=1299"))
    d2 = start_daemon(tmp_path, "--config", str(config), state_dir=state)
    try:
        d2.wait_ready()
        wait_until(lambda: xid_count(d2, bus) >= 2, 30, "the Xid written while down")
        assert xid_count(d2, bus) == 2
        assert len(xid_events(d2, bus)) == 2
    finally:
        d2.terminate()


def test_fault_events_carry_the_gpu_from_proc(tmp_path: Path) -> None:
    proc = Path(__file__).parents[1] / "fixtures" / "proc"
    kern = tmp_path / "kern.log"
    kern.write_text("")
    config = tmp_path / "c.yaml"
    config.write_text(
        f"gpus:\n  backend: 'off'\npaths:\n  proc: {proc}\nkernel:\n  source: file\n  path: {kern}\n"
    )
    d = start_daemon(tmp_path, "--config", str(config))
    try:
        d.wait_ready()
        with kern.open("a") as fh:
            fh.write(LINE)
        bus = "0000:3b:00.0"
        events = wait_until(lambda: xid_events(d, bus), 30, "the Xid event")
        assert events[0]["details"]["uuid"] == "GPU-1f3e5a6b-7c8d-9e0f-1a2b-3c4d5e6f7a8b"
        assert events[0]["details"]["gpu"] == 3
    finally:
        d.terminate()
