"""The fleet path end to end with deploy/'s configs: a real Prometheus scraping ``inferwatch
demo`` evaluates the exported shipped rules and its alert reaches a webhook through a real
Alertmanager; a daemon's ``alertmanager_configs`` pushes into that same Alertmanager."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import wait_until
from integration.daemon_proc import start_daemon
from integration.promstack import (
    Sink,
    get_json,
    stack,
    start_alertmanager,
    start_demo,
    start_prometheus,
)

pytestmark = pytest.mark.integration

ALERT = "GpuMmuFaultOnAllRanks"


def xid_79() -> str:
    """Stamped when written (not at import: the suite may import this module many minutes
    earlier, and a first start takes records older than kernel.alert_max_age for history)."""
    now = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
    return (
        f"{now} gpu-09 kernel: NVRM: Xid (PCI:0000:5e:00): 79, pid=1234, name=python3, "
        "GPU has fallen off the bus.\n"
    )


def test_a_shipped_rule_pages_through_alertmanager_and_a_daemon_pushes_into_it(
    tmp_path: Path,
) -> None:
    with stack(tmp_path) as s, Sink() as sink:
        am = start_alertmanager(s, sink.url)
        demo = start_demo(s)
        # The demo scraped as two hosts: "demo" pages through Prometheus, "quiet" is one whose
        # daemon notifies by itself, so Prometheus sends none of its alerts.
        address = f"127.0.0.1:{demo}"
        prom = start_prometheus(
            s,
            [(address, {"host": "demo", "instance": "demo"}),
             (address, {"host": "quiet", "instance": "quiet"})],
            am,
            daemon_notifies="quiet",
        )  # fmt: skip
        # The demo's scripted dual-GPU Xid 31 incident, evaluated by Prometheus.
        (alert, *_) = wait_until(lambda: sink.firing(ALERT), 60, "the incident's webhook")
        assert alert["labels"]["host"] == "demo"
        assert alert["labels"]["classification"] == "software-oob-all-ranks"
        firing = get_json(f"{prom}/api/v1/alerts")["data"]["alerts"]
        assert {a["labels"]["host"] for a in firing if a["labels"]["alertname"] == ALERT} == {
            "demo", "quiet"
        }  # fmt: skip
        listed = get_json(f"{am}/api/v2/alerts")  # sent in one batch: both or neither
        assert {a["labels"]["host"] for a in listed if a["labels"]["alertname"] == ALERT} == {
            "demo"
        }
        assert {a["labels"]["host"] for a in sink.firing(ALERT)} == {"demo"}
        assert alert["generatorURL"].endswith("&g0.tab=1")  # from Prometheus, not inferwatch
        rules = get_json(f"{prom}/api/v1/rules") or {}
        names = {g["name"] for g in rules["data"]["groups"]}
        assert "inferwatch-fleet" in names and "inferwatch-gpu" in names

        # A daemon notifying by itself, into the fleet's Alertmanager.
        kern = tmp_path / "kern.log"
        kern.write_text("")
        config = tmp_path / "pusher.yaml"
        config.write_text(
            "external_labels: {host: gpu-09}\n"
            "gpus: {backend: 'off'}\n"
            f"kernel: {{source: file, path: {kern}}}\n"
            "route: {receiver: fleet, group_wait: 0s}\n"
            f"receivers:\n  - name: fleet\n    alertmanager_configs: [{{url: '{am}'}}]\n"
        )
        d = start_daemon(tmp_path, "--config", str(config))
        try:
            d.wait_ready()
            with kern.open("a") as fh:
                fh.write(xid_79())
            (pushed, *_) = wait_until(
                lambda: sink.firing("GpuFallenOffBus"), 60, "the pushed alert's webhook"
            )
        finally:
            d.terminate()
        assert pushed["labels"]["pci_bus_id"] == "0000:5e:00.0"
        assert pushed["labels"]["severity"] == "critical"
        assert pushed["labels"]["host"] == "gpu-09"  # the daemon's external labels travel
