"""kill -9 just after a page (hardening issue, item 10, second half): in 40 kill -9s one alert
went firing → resolved → firing, a second page with a new ``startsAt``, when the kill fell after
the notification was written and before the next snapshot. Here a real daemon follows a real
kern.log and pages a real webhook sink on 127.0.0.1; it is killed with SIGKILL right after each
page and restarted, the kill falling at three points: while the POST is still unanswered; just
after the answer; and after the answer *and* a later snapshot, where the kill leaves the
snapshot of one generation before (the write that was to replace it never happened: the daemon
is restarted on the previous ``snapshot.bin``, as a kill between a snapshot's parts left it).
A receiver that honours ``Idempotency-Key`` must see each alert announced once: one firing
message, one ``startsAt``, nothing resolved."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port, wait_until
from inferwatch.statedir import SNAPSHOT_FILE
from integration.daemon_proc import DaemonProc, start_daemon
from reliability.attack_table import AttackRow

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
KILLS = 10


def now() -> str:
    """The syslog stamp of this moment (taken when a line is written, never at import: the
    suite may import this module many minutes before the test runs, and a first start takes
    records older than kernel.alert_max_age for history, not pages)."""
    return time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)


def filler() -> str:
    return f"{now()} hyperion kernel: usb 1-1: new high-speed USB device number 7\n"


MODES = ("in flight", "answered", "older snapshot")


@dataclass
class Post:
    key: str
    alerts: list[dict[str, Any]]


@dataclass
class Sink:
    """A webhook receiver; ``hold`` keeps each answer back until released (a POST in flight)."""

    port: int = field(default_factory=free_port)
    posts: list[Post] = field(default_factory=list)
    hold: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    answered: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self) -> ThreadingHTTPServer:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with sink.lock:
                    sink.posts.append(
                        Post(self.headers.get("Idempotency-Key", ""), json.loads(body)["alerts"])
                    )
                if sink.hold:
                    sink.release.wait(30)
                try:
                    self.send_response(200)
                    self.end_headers()
                except OSError:
                    pass  # the daemon was killed while we held the answer
                sink.answered.set()

            def log_message(self, *_args: object) -> None:
                return

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def about(self, bus: str) -> list[tuple[str, dict[str, Any]]]:
        with self.lock:
            return [
                (p.key, a)
                for p in self.posts
                for a in p.alerts
                if a["labels"].get("pci_bus_id") == bus
            ]


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    server = s.serve()
    try:
        yield s
    finally:
        s.release.set()
        server.shutdown()


def xid_line(bus: str) -> str:
    domain = bus.split(":", maxsplit=1)[0]
    return (
        f"{now()} hyperion kernel: NVRM: Xid (PCI:{domain}:3b:00): 79, pid=42, name=python3, "
        "GPU has fallen off the bus.\n"
    )


def firing_in(d: DaemonProc, bus: str) -> bool:
    alerts = d.get("/api/v1/alerts").json()["alerts"]
    return any(a["labels"].get("pci_bus_id") == bus and a["state"] == "firing" for a in alerts)


def settled(d: DaemonProc, bus: str) -> bool:
    return firing_in(d, bus) and d.get("/api/v1/status").json()["notify"]["outbox_pending"] == 0


def test_an_alert_paged_just_before_a_kill_is_not_paged_again(
    tmp_path: Path, sink: Sink, attack: AttackRow
) -> None:
    attack.describe(
        f"{KILLS} kill -9s right after a page (POST in flight, answered, snapshot one "
        "generation older), each restarted",
        "each alert announced once: one firing message, one startsAt, no resolved",
    )
    kern = tmp_path / "kern.log"
    kern.write_text(f"{now()} hyperion kernel: usb 1-1: new device\n")
    config = tmp_path / "c.yaml"
    config.write_text(
        f"gpus: {{backend: 'off'}}\nkernel: {{source: file, path: '{kern}'}}\n"
        "route:\n  receiver: hook\n  group_by: [alertname, pci_bus_id]\n"
        "  group_wait: 0s\n  group_interval: 1s\n  repeat_interval: 12h\n"
        "outbox: {retry_initial: 1s, retry_max: 1s}\n"
        f"receivers:\n  - name: hook\n    webhook_configs:\n"
        f"      - url: 'http://127.0.0.1:{sink.port}/hook'\n"
    )
    state = tmp_path / "state"
    buses = [f"{0x2000 + i:04x}:3b:00.0" for i in range(KILLS)]
    run = 0
    snap, older = state / SNAPSHOT_FILE, tmp_path / "older.bin"

    def start() -> DaemonProc:
        nonlocal run
        run += 1
        where = tmp_path / f"run{run}"
        where.mkdir()
        d = start_daemon(where, "--config", str(config), state_dir=state)
        d.wait_ready(60)
        return d

    d = start()
    try:
        for i, bus in enumerate(buses):
            mode = MODES[i % len(MODES)]
            if mode == "older snapshot":  # a generation written before the record
                wait_until(snap.exists, 60, "a snapshot")
                older.write_bytes(snap.read_bytes())
            sink.hold, sink.answered = mode == "in flight", threading.Event()
            sink.release.clear()
            with kern.open("a") as fh:
                if mode == "older snapshot":  # a busy log: re-reading it takes a while
                    fh.write(filler() * 50_000)
                fh.write(xid_line(bus))
            wait_until(lambda b=bus: sink.about(b), 60, f"the page for {bus}")
            if mode != "in flight":
                wait_until(sink.answered.is_set, 30, "the sink's answer")
            if mode == "older snapshot":
                wait_until(lambda: snap.read_bytes() != older.read_bytes(), 60, "a new snapshot")
            d.kill()
            sink.release.set()
            if mode == "older snapshot":
                older.replace(snap)
            d = start()
            wait_until(lambda b=bus, d=d: settled(d, b), 120, f"{bus} firing with nothing pending")
        # a last page through the same daemon proves the sink still hears it after the kills
        with kern.open("a") as fh:
            fh.write(xid_line("2fff:3b:00.0"))
        wait_until(lambda: sink.about("2fff:3b:00.0"), 30, "the last page")
    finally:
        sink.release.set()
        d.terminate()
    counts = []
    for bus in buses:
        seen = sink.about(bus)
        firing = {key for key, a in seen if a["status"] == "firing"}
        starts = {a["startsAt"] for _, a in seen}
        resolved = [a for _, a in seen if a["status"] == "resolved"]
        counts.append((len(firing), len(starts), len(resolved)))
    attack.saw(
        f"{KILLS} alerts: {sum(f for f, _, _ in counts)} distinct firing messages, "
        f"{sum(s for _, s, _ in counts)} startsAt values, {sum(r for _, _, r in counts)} resolved"
    )
    for bus, seen_counts in zip(buses, counts, strict=True):
        assert seen_counts == (1, 1, 0), (bus, sink.about(bus))
