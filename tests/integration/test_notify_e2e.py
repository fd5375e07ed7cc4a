"""From the kernel to the owner's webhook: an Xid written into the real /dev/kmsg reaches a
local HTTP sink as an Alertmanager v4 payload, once (root only)."""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import IN_CI, wait_until
from integration.daemon_proc import start_daemon
from integration.test_kernel_e2e import kmsg_write
from integration.webhook_sink import Sink, running_sink

pytestmark = [pytest.mark.integration, pytest.mark.kmsg]


@pytest.fixture
def sink() -> Iterator[Sink]:
    yield from running_sink()


def test_xid_reaches_the_webhook_once(tmp_path: Path, sink: Sink) -> None:
    if not (os.geteuid() == 0 and os.access("/dev/kmsg", os.W_OK)):
        if IN_CI:
            pytest.fail("CI runs as root: /dev/kmsg must be writable")
        pytest.skip("needs root and a writable /dev/kmsg")
    domain = f"{random.randrange(0x1000, 0xFFFF):04x}"
    bus = f"{domain}:3b:00.0"
    config = tmp_path / "c.yaml"
    config.write_text(
        "gpus:\n  backend: 'off'\nkernel:\n  source: kmsg\n"
        "route:\n  receiver: hook\n  group_by: [alertname, pci_bus_id]\n"
        "  group_wait: 0s\n  group_interval: 10s\n"
        f"receivers:\n  - name: hook\n    webhook_configs:\n"
        f"      - url: http://127.0.0.1:{sink.port}/hook\n"
    )
    d = start_daemon(tmp_path, "--config", str(config))
    try:
        d.wait_ready()
        written = time.time()
        kmsg_write(
            f"NVRM: Xid (PCI:{domain}:3b:00): 79, pid=42, name=python3, GPU has fallen off the bus."
        )
        alerts = wait_until(lambda: sink.alerts_for(bus), 30, "the webhook for our Xid")
        (alert,) = alerts
        assert alert["status"] == "firing"
        assert alert["labels"]["alertname"] == "GpuFallenOffBus"
        assert alert["labels"]["severity"] == "critical"
        assert "fallen off the bus" in alert["annotations"]["summary"]
        assert "已从总线上掉线（Xid 79）" in alert["annotations"]["summary_zh"]
        post = next(p for _, p in sink.posts if alert in p["alerts"])
        assert post["version"] == "4" and post["receiver"] == "hook"
        arrived = next(t for t, p in sink.posts if alert in p["alerts"])
        print(f"kmsg write -> webhook: {1000 * (arrived - written):.0f} ms")
        wait_until(lambda: d.get("/api/v1/status").json()["notify"]["outbox_pending"] == 0, 30)
    finally:
        d.terminate()
    # The outbox holds exactly one delivered message for our alert's group: written once,
    # sent once (the daemon is stopped, so nothing can follow).
    with sqlite3.connect(d.state_dir / "outbox.db") as db:
        rows = db.execute("SELECT state, payload FROM outbox").fetchall()
    ours = [state for state, payload in rows if bus in payload]
    assert ours == ["sent"]
    assert len(sink.alerts_for(bus)) == 1
