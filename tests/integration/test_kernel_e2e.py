"""Xid records written into the real /dev/kmsg reach /metrics and the event log exactly once,
across a kill -9 and a record written while the daemon was down (root only)."""

from __future__ import annotations

import os
import random
import re
import signal
from pathlib import Path

import pytest

from conftest import IN_CI, wait_until
from integration.daemon_proc import DaemonProc, start_daemon

pytestmark = [pytest.mark.integration, pytest.mark.kmsg]


def kmsg_write(text: str) -> None:
    fd = os.open("/dev/kmsg", os.O_WRONLY)  # a new descriptor per record: the kernel rate-limits
    try:
        os.write(fd, f"<4>{text}\n".encode())
    finally:
        os.close(fd)


def xid_count(d: DaemonProc, bus: str) -> float:
    total = 0.0
    for line in d.metrics().splitlines():
        if line.startswith("inferwatch_xid_errors_total{") and f'pci_bus_id="{bus}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def xid_events(d: DaemonProc, bus: str) -> list[dict[str, object]]:
    rows = d.get("/api/v1/events?type=xid&limit=10000").json()["events"]
    return [r for r in rows if r["details"].get("pci_bus_id") == bus]


def test_xid_counted_once_across_kill_and_downtime(tmp_path: Path) -> None:
    if not (os.geteuid() == 0 and os.access("/dev/kmsg", os.W_OK)):
        if IN_CI:
            pytest.fail("CI runs as root: /dev/kmsg must be writable")
        pytest.skip("needs root and a writable /dev/kmsg")
    domain = f"{random.randrange(0x1000, 0xFFFF):04x}"  # a unique marker in the shared ring
    bus = f"{domain}:3b:00.0"
    short = f"{domain}:3b:00"
    config = tmp_path / "c.yaml"
    config.write_text("gpus:\n  backend: 'off'\nkernel:\n  source: kmsg\n")
    state = tmp_path / "state"
    xid = f"NVRM: Xid (PCI:{short}): 79, pid=1234, name=python3, GPU has fallen off the bus."

    d = start_daemon(tmp_path, "--config", str(config), state_dir=state)
    try:
        d.wait_ready()
        kmsg_write(xid)
        wait_until(lambda: xid_count(d, bus) == 1, 30, "the first Xid on /metrics")
        d.proc.send_signal(signal.SIGHUP)  # a reload writes a snapshot with the checkpoint
        wait_until(lambda: "config reloaded" in d.log(), 30)
        kmsg_write(xid.replace("pid=1234", "pid=1235"))
        wait_until(lambda: xid_count(d, bus) == 2, 30, "the second Xid")
        events = xid_events(d, bus)
        assert len(events) == 2
        assert events[0]["details"]["xid"] == 79
    finally:
        d.kill()  # kill -9: no final snapshot

    kmsg_write(xid.replace("pid=1234", "pid=1236"))  # written while the daemon is down

    d2 = start_daemon(tmp_path, "--config", str(config), state_dir=state)
    try:
        d2.wait_ready()
        wait_until(lambda: xid_count(d2, bus) >= 3, 30, "the Xid written while down")
        incidents = d2.get("/api/v1/events?type=fault_incident&limit=10000").json()["events"]
        assert any(bus in i["details"].get("gpus", []) for i in incidents)
        assert xid_count(d2, bus) == 3
        assert len(xid_events(d2, bus)) == 3
        text = d2.metrics()
        assert re.search(
            r'inferwatch_gpu_fault_incidents_total\{classification="[a-z-]+"\} \d', text
        )
    finally:
        code, _ = d2.terminate()
    assert code == 0
