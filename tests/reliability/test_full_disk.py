"""The state dir fills up (a real 2 MB tmpfs) while the daemon runs: critical alerts are still
delivered, the ones that cannot be delivered yet are kept in memory and reach the disk when
space returns, and /api/v1/status says what is going on (root only: mount)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port, wait_until
from integration.daemon_proc import DaemonProc, start_daemon
from reliability.attack_table import AttackRow
from reliability.tmpfs import fill, remount, tmpfs

pytestmark = pytest.mark.integration

BUSES = {name: f"0000:{n:02x}:00.0" for n, name in enumerate("ABC", start=0x3B)}


class Sink:
    """A webhook receiver on 127.0.0.1 that answers 503 while ``down`` is set."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.down = threading.Event()
        self.port = free_port()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if sink.down.is_set():
                    self.send_response(503)
                else:
                    sink.posts.append(json.loads(body))
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def firing(self, bus: str) -> list[dict[str, Any]]:
        return [
            a
            for post in self.posts
            for a in post["alerts"]
            if a["labels"].get("pci_bus_id") == bus and a["status"] == "firing"
        ]


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    try:
        yield s
    finally:
        s.server.shutdown()
        s.server.server_close()


def xid_line(bus: str) -> str:
    stamp = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
    return (
        f"{stamp} hyperion kernel: NVRM: Xid (PCI:{bus[:-2]}): 79, pid=1234, name=python3, "
        "GPU has fallen off the bus.\n"
    )


def status(d: DaemonProc) -> dict[str, Any]:
    doc: dict[str, Any] = d.get("/api/v1/status").json()
    return doc


def disk_problems(d: DaemonProc) -> list[str]:
    return [p for p in status(d)["problems"] if "full" in p or "read-only" in p]


def test_alerts_survive_a_full_state_dir(tmp_path: Path, sink: Sink, attack: AttackRow) -> None:
    attack.describe(
        "state dir on a 2 MB tmpfs filled while running; 3 critical Xid 79 alerts, receiver "
        "down for two; then space freed, kill -9, restart",
        "all three delivered (from memory while full), problem reported then cleared, none lost",
    )
    kern = tmp_path / "kern.log"
    kern.write_text("")
    config = tmp_path / "c.yaml"
    config.write_text(
        f"gpus:\n  backend: 'off'\nkernel:\n  source: file\n  path: {kern}\n"
        "outbox:\n  retry_initial: 500ms\n  retry_max: 1s\n"
        "route:\n  receiver: hook\n  group_by: [alertname, pci_bus_id]\n"
        "  group_wait: 0s\n  group_interval: 10s\n  repeat_interval: 1h\n"
        f"receivers:\n  - name: hook\n    webhook_configs:\n"
        f"      - url: http://127.0.0.1:{sink.port}/hook\n"
    )

    def xid(name: str) -> None:
        with kern.open("a") as fh:
            fh.write(xid_line(BUSES[name]))

    with tmpfs(tmp_path / "state") as state:
        d = start_daemon(tmp_path, "--config", str(config), state_dir=state)
        d2: DaemonProc | None = None
        try:
            d.wait_ready()
            wait_until((state / "outbox.db").exists, 10, "the outbox file")
            filler = fill(state)
            # 1. disk full, receiver up: delivered at once, from memory
            xid("A")
            wait_until(lambda: sink.firing(BUSES["A"]), 30, "A delivered while the disk is full")
            wait_until(lambda: disk_problems(d), 10, "the full disk reported in status")
            attack.saw(f"A delivered while full; status: {disk_problems(d)[0][:60]!r}")
            assert "inferwatch_state_write_errors_total" in d.metrics()
            # 2. disk full, receiver down: kept in memory, not lost
            sink.down.set()
            xid("B")
            xid("C")

            def in_memory() -> int:
                return int(status(d)["notify"]["outbox_memory_pending"])

            wait_until(lambda: in_memory() >= 2, 30, "B and C held in memory")
            attack.saw(f"{in_memory()} held in memory while the receiver is down")
            # 3. space returns: the rows reach outbox.db, the problem clears
            filler.unlink()
            wait_until(lambda: in_memory() == 0, 30, "the memory rows written to disk")
            wait_until(lambda: not disk_problems(d), 30, "the problem cleared")
            assert status(d)["notify"]["outbox_pending"] >= 2
            freed = time.time()
            wait_until(lambda: (status(d)["last_snapshot"] or 0) > freed, 40, "a snapshot")
            # 4. kill -9 and restart with the receiver back: B and C arrive from disk
            d.kill()
            sink.down.clear()
            d2 = start_daemon(tmp_path, "--config", str(config), state_dir=state)
            d2.wait_ready()
            for name in "BC":
                wait_until(lambda n=name: sink.firing(BUSES[n]), 30, f"{name} after the restart")
            attack.saw("space freed: written to disk; B and C delivered after kill -9 and restart")
        finally:
            d.kill()
            if d2 is not None:
                d2.kill()


def test_read_only_state_dir_runs_with_state_in_memory(
    tmp_path: Path, sink: Sink, attack: AttackRow
) -> None:
    attack.describe(
        "state dir read-only (tmpfs remounted ro) at start",
        "daemon starts, says so in status, pages from memory, moves nothing aside",
    )
    kern = tmp_path / "kern.log"
    kern.write_text("")
    config = tmp_path / "c.yaml"
    config.write_text(
        f"gpus:\n  backend: 'off'\nkernel:\n  source: file\n  path: {kern}\n"
        "route:\n  receiver: hook\n  group_by: [alertname, pci_bus_id]\n  group_wait: 0s\n"
        f"receivers:\n  - name: hook\n    webhook_configs:\n"
        f"      - url: http://127.0.0.1:{sink.port}/hook\n"
    )
    with tmpfs(tmp_path / "state") as state:
        d = start_daemon(tmp_path, "--config", str(config), state_dir=state)
        try:
            d.wait_ready()
            wait_until((state / "outbox.db").exists, 10, "the outbox file")
        finally:
            code, _ = d.terminate()
        assert code == 0
        before = sorted(p.name for p in state.iterdir())
        remount(state, "ro")
        d = start_daemon(tmp_path, "--config", str(config), state_dir=state)
        try:
            d.wait_ready()
            assert any("read-only" in p for p in status(d)["problems"]), status(d)["problems"]
            with kern.open("a") as fh:
                fh.write(xid_line(BUSES["A"]))
            wait_until(lambda: sink.firing(BUSES["A"]), 30, "A delivered from memory")
            problem = next(p for p in status(d)["problems"] if "read-only" in p)
            attack.saw(f"started; {problem[:60]!r}; A delivered")
        finally:
            code, _ = d.terminate()
        assert code == 0
        attack.saw(f"files after: {sorted(p.name for p in state.iterdir()) == before and 'same'}")
        assert sorted(p.name for p in state.iterdir()) == before  # nothing moved aside
        assert "Traceback" not in d.log()
