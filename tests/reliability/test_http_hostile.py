"""Slowloris and friends against the HTTP server: half-sent requests, more connections than the
server may hold, oversized request lines. Real sockets on 127.0.0.1, bounded in number and time.

The server must keep answering /metrics, free descriptors (a deadline for headers, a cap on
connections) and log each kind of trouble once with a count, never a traceback per request.
"""

from __future__ import annotations

import asyncio
import json
import resource
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from conftest import wait_until
from inferwatch.export.errlog import ErrorThrottle
from inferwatch.export.guard import HttpLimits, default_max_connections
from inferwatch.export.server import ExportServer
from integration.daemon_proc import start_daemon
from reliability.attack_table import AttackRow

HALF_REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


async def _no_events(**_kw: Any) -> list[dict[str, Any]]:
    return []


@contextmanager
def served(limits: HttpLimits) -> Iterator[ExportServer]:
    """An ExportServer on 127.0.0.1 in a thread of its own, so the test can block on sockets."""
    loop = asyncio.new_event_loop()
    server = ExportServer(CollectorRegistry(), dict, _no_events, limits=limits)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.start("127.0.0.1", 0), loop).result(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def half_open(port: int, count: int) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(HALF_REQUEST)
        socks.append(s)
    return socks


def closed_by_server(s: socket.socket) -> bytes | None:
    """What the server sent before closing, or None while the connection is still open."""
    s.setblocking(False)
    chunks = []
    try:
        while chunk := s.recv(4096):
            chunks.append(chunk)
    except BlockingIOError:
        return None
    except ConnectionResetError:
        pass
    return b"".join(chunks) or b"<closed>"


def metrics_in(port: int, within: float) -> float:
    t0 = time.monotonic()
    r = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=within, trust_env=False)
    assert r.status_code == 200
    return time.monotonic() - t0


def test_half_sent_requests_get_408_after_the_header_deadline(attack: AttackRow) -> None:
    attack.describe(
        "10 half-sent requests and 1 silent connection, header deadline 0.3 s",
        "408 and close for each, /metrics answers < 2 s, every descriptor freed",
    )
    with served(HttpLimits(max_connections=32, header_timeout=0.3)) as server:
        assert server.bound is not None
        port = server.bound[1]
        socks = half_open(port, 10)
        quiet = socket.create_connection(("127.0.0.1", port), timeout=5)  # sends nothing
        try:
            replies = [wait_until(lambda s=s: closed_by_server(s), 5, "408") for s in socks]
            attack.saw(f"{sum(r.startswith(b'HTTP/1.1 408') for r in replies)}/10 got 408")
            assert all(r.startswith(b"HTTP/1.1 408") for r in replies), replies[:2]
            assert wait_until(lambda: closed_by_server(quiet), 5, "idle close") == b"<closed>"
            assert metrics_in(port, 2) < 2
            assert server.http_status()["errors"] == {"request headers not completed in time": 10}
            wait_until(lambda: server.guard.open_count == 0, 5, "every descriptor freed")
        finally:
            for s in [*socks, quiet]:
                s.close()


def test_beyond_the_cap_the_oldest_waiting_connection_makes_room(attack: AttackRow) -> None:
    attack.describe(
        "30 idle half-open connections against a cap of 8",
        "never more than 8 open, the 22 oldest closed, /metrics still answers",
    )
    with served(HttpLimits(max_connections=8, header_timeout=60)) as server:
        assert server.bound is not None
        port = server.bound[1]
        socks = half_open(port, 30)
        try:
            wait_until(lambda: server.guard.open_count <= 8, 5, "the cap")
            for _ in range(5):
                assert metrics_in(port, 2) < 2
            assert server.guard.open_count <= 8
            dropped = server.http_status()["errors"]
            attack.saw(f"open {server.guard.open_count}, errors {dropped}")
            assert dropped["connection closed to make room: it had not sent a request"] >= 22
            evicted = [s for s in socks[:22] if closed_by_server(s) is not None]
            assert len(evicted) == 22  # the oldest went first
        finally:
            for s in socks:
                s.close()


def test_an_oversized_request_line_is_refused_without_a_traceback(attack: AttackRow) -> None:
    attack.describe("a 20 KB request line, then a 20 KB header", "a 4xx each, server unharmed")
    with served(HttpLimits(max_connections=8)) as server:
        assert server.bound is not None
        port = server.bound[1]
        r = httpx.get(f"http://127.0.0.1:{port}/metrics?{'a' * 20_000}", timeout=5, trust_env=False)
        attack.saw(f"request line: {r.status_code}")
        assert 400 <= r.status_code < 500
        r = httpx.get(
            f"http://127.0.0.1:{port}/healthz", headers={"X-Big": "b" * 20_000}, trust_env=False
        )
        attack.saw(f"header: {r.status_code}")
        assert 400 <= r.status_code < 500
        assert metrics_in(port, 2) < 2


def test_errors_are_logged_once_per_kind_then_counted(attack: AttackRow) -> None:
    attack.describe(
        "10,000 accept failures in 100 s (fake clock)", "one line, then a count per minute"
    )
    now = [0.0]
    throttle = ErrorThrottle(interval=60, clock=lambda: now[0])
    with capture_logs() as logs:
        for i in range(10_000):
            now[0] = i * 0.01  # 100 s in all
            throttle.note("accept failed", f"EMFILE #{i}")
        throttle.note("other", "once")
        throttle.flush()
    assert throttle.totals == {"accept failed": 10_000, "other": 1}
    firsts = [x for x in logs if x["event"].startswith("server error (")]
    assert [(x["kind"], x["detail"]) for x in firsts] == [
        ("accept failed", "EMFILE #0"),
        ("other", "once"),
    ]
    repeats = [x for x in logs if x["event"] == "server error repeated"]
    attack.saw(f"{len(firsts)} first lines, {len(repeats)} count lines for 10,001 errors")
    assert [x["count"] for x in repeats] == [6000, 3999]  # at 60 s, then at the flush
    assert sum(x["count"] for x in repeats) + 1 == 10_000


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def test_a_system_error_is_logged_without_a_traceback_a_bug_with_one(attack: AttackRow) -> None:
    """asyncio's accept failure when the descriptors run out (the slowloris test meets it when
    the kernel's backlog outruns the connection cap) is the host's condition: logged once by its
    message and origin. An exception of the server's own is a bug: its traceback is kept."""
    attack.describe("accept out of descriptors, then a bug", "no traceback, then one")
    throttle = ErrorThrottle()
    loop = asyncio.new_event_loop()
    try:
        with capture_logs() as logs:
            for _ in range(3):
                emfile = _raised(OSError(24, "Too many open files"))
                context = {"message": "socket.accept() out of system resource", "exception": emfile}
                throttle.loop_exception(loop, context)
            throttle.loop_exception(loop, {"message": "boom", "exception": _raised(KeyError("k"))})
    finally:
        loop.close()
    attack.saw(
        f"{len(logs)} lines, tracebacks on {[x['kind'][:20] for x in logs if 'traceback' in x]}"
    )
    assert len(logs) == 2
    assert "traceback" not in logs[0] and "Too many open files" in logs[0]["detail"]
    assert logs[1]["traceback"].startswith("Traceback") and "KeyError" in logs[1]["traceback"]


def test_the_default_cap_leaves_most_descriptors_to_the_daemon(attack: AttackRow) -> None:
    attack.describe("the default connection cap", "at most a quarter of the open-file limit")
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    cap = default_max_connections()
    attack.saw(f"cap {cap} with an open-file limit of {soft}")
    assert 16 <= cap <= 256
    if soft != resource.RLIM_INFINITY:
        assert cap <= max(16, soft // 4)


@pytest.mark.integration
def test_the_daemon_survives_300_half_open_connections(tmp_path: Path, attack: AttackRow) -> None:
    """300 half-sent requests against a daemon allowed 256 descriptors: before the guard it
    ran out of descriptors, /metrics timed out and the log grew by megabytes a second."""
    attack.describe(
        "slowloris: 300 half-sent requests, daemon limited to 256 open files",
        "/metrics < 2 s, connections capped, no traceback, log < 64 KB, each kind logged once",
    )
    count, daemon_files = 300, 256
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY and soft < count + 64:
        pytest.skip(f"this test needs {count + 64} open files, the limit is {soft}")
    d = start_daemon(tmp_path, nofile=daemon_files)
    socks: list[socket.socket] = []
    try:
        d.wait_ready()
        for _ in range(count):
            s = socket.socket()
            s.settimeout(5)
            with suppress(OSError):  # a full backlog may refuse one; the test is the rest
                s.connect(("127.0.0.1", d.port))
                s.sendall(HALF_REQUEST)
            socks.append(s)
        for _ in range(5):
            assert metrics_in(d.port, 2) < 2
        status = d.get("/api/v1/status").json()["http"]
        assert status["max_connections"] == daemon_files // 4
        assert status["connections"] <= status["max_connections"]
        assert sum(status["errors"].values()) >= count - status["max_connections"]
    finally:
        for s in socks:
            s.close()
        code, _ = d.terminate()
    log = d.log()
    attack.saw(f"log {len(log)} bytes, {log.count('Traceback')} tracebacks, exit {code}")
    assert code == 0
    assert "Traceback" not in log
    assert len(log) < 64 * 1024, f"the log grew to {len(log)} bytes"
    lines = [json.loads(x) for x in log.splitlines() if x.startswith("{")]
    firsts = [x for x in lines if x.get("event", "").startswith("server error (")]
    assert len(firsts) == len({x["kind"] for x in firsts})  # each kind logged once
