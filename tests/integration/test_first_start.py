"""A first start (no state yet) reads the past of its inputs, counts it and keeps its events, and
pages for none of it: only what happens after the age limit's horizon may ring the phone.

Both inputs are real: Xid records in the real kernel ring (root only), and an engine log on disk
whose crash is months old. Each test ends with a fresh fault that must page, the sync point
that proves the old one would have been sent by then."""

from __future__ import annotations

import os
import random
import time
from datetime import datetime
from pathlib import Path

import pytest

from conftest import IN_CI, REPO, wait_until
from integration import test_notify_e2e
from integration.daemon_proc import DaemonProc, start_daemon
from integration.test_kernel_e2e import kmsg_write, xid_events
from integration.test_notify_e2e import Sink

sink = test_notify_e2e.sink  # the webhook sink fixture, shared

pytestmark = [pytest.mark.integration]
CORPUS = (REPO / "tests" / "fixtures" / "corpus" / "engine-lines.txt").read_text().splitlines()


def hook_config(tmp: Path, sink: Sink, body: str, group_by: str) -> Path:
    config = tmp / "c.yaml"
    config.write_text(
        "gpus:\n  backend: 'off'\n" + body + f"route:\n  receiver: hook\n  group_by: [{group_by}]\n"
        "  group_wait: 0s\n  group_interval: 10s\n"
        f"receivers:\n  - name: hook\n    webhook_configs:\n"
        f"      - url: http://127.0.0.1:{sink.port}/hook\n"
    )
    return config


def firing(d: DaemonProc, alertname: str) -> list[dict[str, object]]:
    alerts = d.get("/api/v1/alerts").json()["alerts"]
    return [a for a in alerts if a["labels"]["alertname"] == alertname]


@pytest.mark.kmsg
def test_old_xids_in_the_ring_are_counted_not_paged(tmp_path: Path, sink: Sink) -> None:
    if not (os.geteuid() == 0 and os.access("/dev/kmsg", os.W_OK)):
        if IN_CI:
            pytest.fail("CI runs as root: /dev/kmsg must be writable")
        pytest.skip("needs root and a writable /dev/kmsg")
    old_domain, new_domain = (f"{random.randrange(0x1000, 0xFFFF):04x}" for _ in range(2))
    old_bus, new_bus = f"{old_domain}:3b:00.0", f"{new_domain}:3b:00.0"
    xid = "NVRM: Xid (PCI:{d}:3b:00): 79, pid={p}, name=python3, GPU has fallen off the bus."
    for pid in range(3):  # three old faults of one GPU: one new series, then two more on it
        kmsg_write(xid.format(d=old_domain, p=4000 + pid))
    written = time.monotonic()
    wait_until(lambda: time.monotonic() - written > 3.0, 10, "the ring's records to age")
    body = "kernel:\n  source: kmsg\n  alert_max_age: 2s\n"
    d = start_daemon(tmp_path, "--config", str(hook_config(tmp_path, sink, body, "pci_bus_id")))
    try:
        d.wait_ready()
        wait_until(lambda: len(xid_events(d, old_bus)) == 3, 30, "the old records' events")
        kmsg_write(xid.format(d=new_domain, p=5000))
        wait_until(lambda: sink.alerts_for(new_bus), 30, "the page for the fresh fault")
        wait_until(lambda: d.get("/api/v1/status").json()["notify"]["outbox_pending"] == 0, 30)
        assert sink.alerts_for(old_bus) == []
        buses = {a["labels"].get("pci_bus_id") for a in firing(d, "GpuFallenOffBus")}
        assert old_bus not in buses and new_bus in buses
        assert f'pci_bus_id="{old_bus}",xid="79"}} 3.0' in d.metrics().replace(
            'category="bus",', ""
        )  # counted all the same
    finally:
        d.terminate()


def test_an_old_engine_crash_is_counted_not_paged(tmp_path: Path, sink: Sink) -> None:
    log = tmp_path / "vllm.log"
    old_crash = CORPUS[32:37]  # June: an AttributeError in EngineCore (signature "exception")
    log.write_text("\n".join(old_crash) + "\n")
    body = f"kernel:\n  source: 'off'\nengines:\n  - name: e1\n    log: {log}\n"
    d = start_daemon(tmp_path, "--config", str(hook_config(tmp_path, sink, body, "signature")))
    try:
        d.wait_ready()

        def crashes(signature: str) -> bool:
            want = f'inferwatch_engine_crashes_total{{engine="e1",signature="{signature}"}} 1.0'
            return want in d.metrics()

        # Counted (its event is older than the event log's 14 days, so it is not kept).
        wait_until(lambda: crashes("exception"), 60, "the old crash to be counted")
        now = datetime.now().strftime("%m-%d %H:%M:%S")  # vLLM stamps local time
        fresh = [line.replace("07-15 21:01:01", now) for line in CORPUS[18:21]]
        with log.open("a") as f:  # an illegal memory access, now
            f.write("\n".join(fresh) + "\n")
        pages = wait_until(
            lambda: [a for _, p in sink.posts for a in p["alerts"]], 60, "the fresh crash's page"
        )
        wait_until(lambda: d.get("/api/v1/status").json()["notify"]["outbox_pending"] == 0, 30)
        pages = [a for _, p in sink.posts for a in p["alerts"]]
        assert {a["labels"]["alertname"] for a in pages} == {"EngineCrashed"}
        assert "exception" not in {a["labels"]["signature"] for a in pages}
        assert firing(d, "EngineCrashed")
        assert all(a["labels"]["signature"] != "exception" for a in firing(d, "EngineCrashed"))
    finally:
        d.terminate()
