"""The real daemon with fake GPUs and a kernel log file: an Xid that the driver reports both as
an NVML event and as a kernel-log line counts once (issue 13 item 3); one NVML alone counts."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from conftest import wait_until
from integration.daemon_proc import start_daemon
from sources.test_gpus import FIXTURES, rewrite

pytestmark = pytest.mark.integration

# CONSTRUCTED: host A's GPU1 (0000:04:00.0) in the corpus's Xid 31 format, with a syslog prefix
LINE = (
    "{stamp} hostA kernel: NVRM: Xid (PCI:0000:04:00): 31, pid=4242, name=VLLM::Worker, "
    "channel 0x00000018, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC4 GPCCLIENT_T1_0 faulted "
    "@ 0x7f3c_1b200000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n"
)


def count(text: str, bus: str, xid: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith("inferwatch_xid_errors_total{") and f'pci_bus_id="{bus}"' in line \
                and f'xid="{xid}"' in line:  # fmt: skip
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_nvml_and_kernel_log_count_one_xid_once(tmp_path: Path) -> None:
    profile = tmp_path / "gpus.json"
    shutil.copy(FIXTURES / "host-a-cmp170hx.json", profile)
    kern = tmp_path / "kern.log"
    kern.write_text("")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"kernel: {{source: file, path: {kern}}}\n"
        f"gpus: {{backend: fake, profile: {profile}, interval: 1s}}\n"
        "engines: []\n"
    )
    daemon = start_daemon(tmp_path, "--config", str(config))
    try:
        daemon.wait_ready()
        wait_until(lambda: "NVML Xid events registered" in daemon.log(), 30, "registration")
        stamp = time.strftime("%b %e %H:%M:%S")
        rewrite(profile, lambda doc: doc.setdefault("events", []).append({"gpu": 1, "xid": 31}))
        with kern.open("a") as f:
            f.write(LINE.format(stamp=stamp))
        wait_until(lambda: count(daemon.metrics(), "0000:04:00.0", "31") >= 1, 30, "the Xid")
        # an NVML-only Xid on GPU0: no line comes, it is released after the hold
        rewrite(profile, lambda doc: doc["events"].append({"gpu": 0, "xid": 13}))
        wait_until(lambda: count(daemon.metrics(), "0000:03:00.0", "13") >= 1, 30, "Xid 13")
        text = daemon.metrics()
        assert count(text, "0000:04:00.0", "31") == 1.0
        events = daemon.get("/api/v1/events?type=xid&since=1h").json()["events"]
        xid31 = [e for e in events if re.search(r"\b31\b", str(e.get("labels", {}).get("xid")))]
        assert len(xid31) == 1, xid31
    finally:
        code, _ = daemon.terminate()
    assert code == 0
