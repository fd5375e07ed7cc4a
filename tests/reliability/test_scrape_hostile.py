"""A hostile engine /metrics endpoint (hardening issue, item 7): a 100 MB body was buffered whole
before the size check (1.54 GB peak); a body that never ends kept the scrape stuck ~100 s with
the source up and ``inferwatch_engine_up`` 1; a garbage body logged a traceback per scrape.

One real daemon scrapes three engines on a real HTTP server on 127.0.0.1, each hostile in its
own way, with ``body_size_limit: 1MB`` and ``scrape_timeout: 2s``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import free_port, wait_until
from integration.daemon_proc import DaemonProc, start_daemon
from reliability.attack_table import AttackRow

pytestmark = [pytest.mark.integration]
BIG = 100 << 20
CHUNK = b"# " + b"x" * 65_000 + b"\n"


class Engine:
    """Serves /big (100 MB, no Content-Length), /slow (a line every 0.2 s, forever) and
    /garbage (200 with text that is not exposition format)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.big_sent = 0
        self.big_requests = 0
        self.stop = threading.Event()
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the body ends when the connection does

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                try:
                    if self.path == "/big":
                        engine.big_requests += 1
                        sent = 0
                        while sent < BIG and not engine.stop.is_set():
                            self.wfile.write(CHUNK)
                            sent += len(CHUNK)
                            engine.big_sent = max(engine.big_sent, sent)
                    elif self.path == "/slow":
                        while not engine.stop.wait(0.2):
                            self.wfile.write(b"# still coming\n")
                            self.wfile.flush()
                    else:
                        self.wfile.write(b"\x00\xff garbage {{{ not=metrics\n" * 50)
                except OSError:
                    return  # the scraper hung up: what the cap and the deadline are for

            def log_message(self, *_args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProc, Engine]]:
    tmp = tmp_path_factory.mktemp("scrape")
    engine = Engine()
    config = tmp / "c.yaml"
    engines = "".join(
        f"  - name: {name}\n    metrics_url: 'http://127.0.0.1:{engine.port}/{name}'\n"
        "    scrape_interval: 1s\n    scrape_timeout: 2s\n    body_size_limit: 1MB\n"
        for name in ("big", "slow", "garbage")
    )
    config.write_text(f"gpus: {{backend: 'off'}}\nkernel: {{source: 'off'}}\nengines:\n{engines}")
    d = start_daemon(tmp, "--config", str(config))
    try:
        d.wait_ready(60)
        yield d, engine
    finally:
        engine.close()
        d.terminate()
        d.kill()


def gauge(d: DaemonProc, name: str, **labels: str) -> float | None:
    want = [f'{k}="{v}"' for k, v in labels.items()]
    for line in d.metrics().splitlines():
        if line.startswith(name + "{") and all(w in line for w in want):
            return float(line.rsplit(" ", 1)[1])
    return None


def source(d: DaemonProc, name: str) -> dict[str, object]:
    sources: dict[str, dict[str, object]] = d.get("/api/v1/status").json()["sources"]
    return sources.get(f"scrape:{name}", {})


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_a_huge_body_is_cut_at_the_cap(scraped: tuple[DaemonProc, Engine], attack: AttackRow):
    d, engine = scraped
    attack.describe(
        "engine /metrics answers a 100 MB body (no Content-Length), body_size_limit 1MB",
        "read stops past 1 MB, scrape failed with the reason, engine_up 0, no 100 MB in memory",
    )
    wait_until(lambda: engine.big_requests >= 3, 60, "three scrapes of /big")
    down = wait_until(lambda: source(d, "big").get("state") == "error", 30, "the source down")
    reason = str(source(d, "big").get("reason", ""))
    peak = peak_rss(d.proc.pid)
    attack.saw(
        f"source {down and 'error'}: {reason[-70:]!r}; most sent before hang-up "
        f"{engine.big_sent >> 20} MB; daemon peak RSS {peak >> 20} MB; "
        f"engine_up {gauge(d, 'inferwatch_engine_up', engine='big')}"
    )
    assert "body_size_limit" in reason
    assert engine.big_sent < 32 << 20  # hung up long before the end
    assert peak < 200 << 20  # the daemon runs in ~80 MB; the body alone was 100 MB
    assert gauge(d, "inferwatch_engine_up", engine="big") == 0.0


def test_a_body_that_never_ends_stops_at_the_deadline(
    scraped: tuple[DaemonProc, Engine], attack: AttackRow
) -> None:
    d, _ = scraped
    attack.describe(
        "engine /metrics sends a line every 0.2 s forever, scrape_timeout 2s",
        "scrape ends at the deadline: source down with the reason, engine_up 0",
    )
    wait_until(lambda: source(d, "slow").get("state") == "error", 30, "the slow source down")
    took = gauge(d, "inferwatch_scrape_duration_seconds", source="scrape:slow") or 0.0
    reason = str(source(d, "slow").get("reason", ""))
    up = wait_until(
        lambda: gauge(d, "inferwatch_engine_up", engine="slow") == 0.0 or None, 30, "engine_up 0"
    )
    attack.saw(f"scrape took {took:.1f} s, then down: {reason[-60:]!r}; engine_up {up and 0}")
    assert "deadline" in reason
    assert took < 10


def test_a_garbage_body_is_logged_once_and_counted(
    scraped: tuple[DaemonProc, Engine], attack: AttackRow
) -> None:
    d, _ = scraped
    attack.describe(
        "engine /metrics answers 200 with garbage on every scrape",
        "engine_up 0, parse errors counted, one log line (no traceback per scrape)",
    )
    errors = "inferwatch_engine_scrape_parse_errors_total"
    wait_until(lambda: (gauge(d, errors, engine="garbage") or 0) >= 5, 60, "five bad scrapes")
    log = d.log()
    lines = [ln for ln in log.splitlines() if "not exposition text" in ln]
    tracebacks = log.count("Traceback")
    attack.saw(
        f"{gauge(d, errors, engine='garbage'):.0f} bad scrapes, {len(lines)} log line(s), "
        f"{tracebacks} tracebacks, engine_up {gauge(d, 'inferwatch_engine_up', engine='garbage')}"
    )
    assert len(lines) == 1
    assert tracebacks == 0
    assert gauge(d, "inferwatch_engine_up", engine="garbage") == 0.0
