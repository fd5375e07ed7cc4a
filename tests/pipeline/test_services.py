"""A watched service against a real loopback engine process: loading, ready, killed, restarted on
another port, answering 503, its port taken by another process, its unit inactive. Probes run
for real; only time between them is a FakeClock, so the grace and the streaks are exact."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port, wait_until
from inferwatch.clock import FakeClock
from inferwatch.config.models import ServiceConfig
from inferwatch.errors import NoData
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.pipeline.services import ServiceWatch
from inferwatch.store.tsdb import SeriesStore

ENGINE = Path(__file__).parents[1] / "fixtures" / "services" / "fake_engine.py"
SIG = "fake_engine.py"


class Engine:
    """Real engine processes started by a test, each killed at the end."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.status = tmp / "status"
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, port: int, port_file: Path | None = None) -> subprocess.Popen[bytes]:
        args = [sys.executable, str(ENGINE), str(port), str(self.status)]
        if port_file is not None:
            args.append(str(port_file))
        proc = subprocess.Popen(args)
        self.procs.append(proc)
        wait_until(lambda: _listening(port), 20, f"engine on {port}")
        return proc

    def answer(self, code: int) -> None:
        self.status.write_text(str(code))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    e = Engine(tmp_path)
    yield e
    e.stop()


async def _blocking(fn: Any) -> Any:
    return await asyncio.to_thread(fn)


class Harness:
    def __init__(self, cfg: ServiceConfig) -> None:
        self.clock = FakeClock(time.time())  # process start times are real wall time
        self.store = SeriesStore(self.clock)
        self.events: list[Event] = []
        self.watch = ServiceWatch(cfg, self.store, self._sink, self.clock, _blocking)

    async def _sink(self, events: list[Event]) -> None:
        self.events.extend(events)

    def polls(self, n: int) -> None:
        for _ in range(n):
            self.clock.advance(self.watch.interval)
            asyncio.run(self.watch.poll())

    def transitions(self) -> list[tuple[str, str, str]]:
        return [(e.details["from"], e.details["to"], e.details["check"]) for e in self.events]

    def value(self, name: str, **labels: str) -> float | None:
        series = self.store.get(name, make_labels({**dict(self.watch.labels), **labels}))
        last = series.last_real() if series is not None else None
        return last[1] if last is not None else None


def test_killed_restarted_on_another_port_then_503(engine: Engine, tmp_path: Path) -> None:
    port_file = tmp_path / "engine.port"
    cfg = ServiceConfig(
        name="flashnext",
        engine="main",
        signature=SIG,
        port_file=port_file,
        http_url="http://127.0.0.1:{port}/v1/models",
        expect_model="demo-model",
    )
    h = Harness(cfg)
    engine.answer(503)  # loading
    first = engine.start(free_port(), port_file)
    h.polls(5)
    assert h.transitions() == [("unknown", "starting", "http")]
    assert h.value("inferwatch_service_state", state="starting") == 1
    assert h.value("inferwatch_probe_success", check="http") == 0
    assert h.value("inferwatch_probe_success", check="port") == 1

    engine.answer(200)
    h.polls(2)
    assert h.transitions()[-1] == ("starting", "up", "")
    assert h.value("inferwatch_service_state", state="up") == 1
    assert h.value("inferwatch_service_state", state="starting") == 0

    first.send_signal(signal.SIGKILL)
    first.wait()
    h.polls(3)
    assert h.transitions()[-1] == ("up", "down", "signature")
    checks = h.watch.status()["checks"]
    assert "stale port file" in checks["port_file"]["detail"]  # its writer is gone
    assert checks["http"]["ok"] is False

    engine.answer(503)
    new_port = free_port()
    engine.start(new_port, port_file)  # back, on another port, loading
    h.polls(3)
    assert h.transitions()[-1] == ("down", "starting", "http")
    engine.answer(200)
    h.polls(2)
    assert h.transitions()[-1] == ("starting", "up", "")
    assert h.value("inferwatch_service_restarts_total") == 1

    engine.answer(503)
    h.polls(2)
    assert h.transitions()[-1][1] == "up"  # two bad probes are not yet down
    h.polls(1)
    assert h.transitions()[-1] == ("up", "down", "http")
    assert f"{new_port}/v1/models answered 503" in h.events[-1].details["reason"]
    assert len(h.events) == 6
    assert all(e.labels["engine"] == "main" for e in h.events)


def test_alternating_answers_flap_once_without_down_or_up(engine: Engine) -> None:
    port = free_port()
    cfg = ServiceConfig(name="svc", http_url=f"http://127.0.0.1:{port}/health", startup_grace=0)
    h = Harness(cfg)
    engine.start(port)
    h.polls(2)
    for i in range(24):
        engine.answer(503 if i % 2 == 0 else 200)
        h.polls(1)
    assert h.transitions() == [("unknown", "up", ""), ("up", "flapping", "http")]
    assert h.value("inferwatch_service_state", state="flapping") == 1


def test_port_taken_by_another_process_is_not_the_services(engine: Engine) -> None:
    port, other = free_port(), free_port()
    engine.start(port)
    squatter = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(other)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    engine.procs.append(squatter)
    wait_until(lambda: _listening(other), 20, "the other server")
    cfg = ServiceConfig(name="svc", signature=SIG, port=other, startup_grace=0)
    h = Harness(cfg)
    h.polls(3)
    detail = h.watch.status()["checks"]["port"]["detail"]
    assert f"port {other} is not the service's: pid {squatter.pid} listens" in detail
    assert h.transitions() == [("unknown", "down", "port")]


def test_unit_inactive_and_active_through_systemctl(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No systemd here: a ``systemctl`` on PATH prints what systemd would for the unit."""
    port = free_port()
    proc = engine.start(port)
    show = tmp_path / "show.txt"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "systemctl"
    fake.write_text(f"#!/bin/sh\ncat {show}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")

    def unit(active: str, sub: str, pid: int, result: str = "success") -> None:
        show.write_text(
            f"LoadState=loaded\nActiveState={active}\nSubState={sub}\nMainPID={pid}\n"
            f"NRestarts=0\nExecMainStatus=0\nResult={result}\n"
        )

    cfg = ServiceConfig(name="svc", unit="flashnext.service", signature=SIG, port=port)
    h = Harness(cfg)
    unit("active", "running", proc.pid)
    h.polls(2)
    assert h.transitions() == [("unknown", "up", "")]
    assert h.value("inferwatch_probe_success", check="unit") == 1
    assert h.value("inferwatch_probe_success", check="port") == 1

    unit("failed", "failed", 0, "exit-code")
    h.polls(3)
    assert h.transitions()[-1] == ("up", "down", "unit")
    assert "is failed/failed, result exit-code" in h.events[-1].details["reason"]


def test_wrong_signature_of_the_units_process(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    proc = engine.start(port)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "systemctl").write_text(
        f"#!/bin/sh\necho ActiveState=active\necho SubState=running\necho MainPID={proc.pid}\n"
    )
    (bindir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    cfg = ServiceConfig(name="svc", unit="x.service", signature="vllm serve", startup_grace=0)
    h = Harness(cfg)
    h.polls(3)
    assert h.transitions() == [("unknown", "down", "signature")]
    assert "wrong signature" in h.events[-1].details["reason"]


def test_no_systemd_here_means_no_series_not_zero() -> None:
    h = Harness(ServiceConfig(name="svc", unit="surely-absent.service"))
    if _systemd_answers():
        pytest.skip("this host runs systemd")
    with pytest.raises(NoData):
        asyncio.run(h.watch.poll())
    assert (
        h.store.get("inferwatch_probe_success", make_labels({"service": "svc", "check": "unit"}))
        is None
    )
    assert h.events == []


def _systemd_answers() -> bool:
    try:
        done = subprocess.run(
            ["systemctl", "show", "-p", "ActiveState", "--", "x"], capture_output=True
        )
    except FileNotFoundError:
        return False
    return done.returncode == 0


def test_websocket_handshake(engine: Engine) -> None:
    port = free_port()
    cfg = ServiceConfig(name="ws", ws_url=f"ws://127.0.0.1:{port}/ws", startup_grace=0)
    h = Harness(cfg)
    h.polls(3)
    assert h.transitions() == [("unknown", "down", "ws")]
    assert "WebSocket" in h.events[-1].details["reason"]
    server = subprocess.Popen([sys.executable, str(ENGINE.with_name("fake_ws.py")), str(port)])
    engine.procs.append(server)
    wait_until(lambda: _listening(port), 20, "the WebSocket server")
    h.polls(2)
    assert h.transitions()[-1] == ("down", "up", "")
    assert h.value("inferwatch_probe_success", check="ws") == 1


def _fake_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, script: str) -> Path:
    """A stand-in for ``name`` on PATH (no systemd, no docker daemon here); it logs its args."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    args = tmp_path / f"{name}.args"
    tool = bindir / name
    tool.write_text(f'#!/bin/sh\necho "$@" >> {args}\n{script}\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return args


def test_user_unit_asks_the_user_manager(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = engine.start(free_port())
    args = _fake_tool(
        tmp_path, monkeypatch, "systemctl", f"printf 'ActiveState=active\\nMainPID={proc.pid}\\n'"
    )
    h = Harness(ServiceConfig(name="svc", user_unit="nvfp4.service", signature=SIG))
    h.polls(2)
    assert h.transitions() == [("unknown", "up", "")]
    assert args.read_text().splitlines()[0].startswith("--user show -p LoadState,ActiveState")


def test_container_states(engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state.json"
    _fake_tool(
        tmp_path,
        monkeypatch,
        "docker",
        f'[ -s {state} ] || {{ echo "Error: No such object: vllm" >&2; exit 1; }}\n'
        f'printf "%s\\t2\\n" "$(cat {state})"',
    )
    port = free_port()
    engine.start(port)
    cfg = ServiceConfig(name="lab", container="vllm", port=port, startup_grace=0)
    h = Harness(cfg)
    h.polls(3)
    assert h.transitions() == [("unknown", "down", "container")]
    assert "container vllm does not exist" in h.events[-1].details["reason"]
    state.write_text('{"Status":"running","Running":true,"Pid":0,"Health":{"Status":"healthy"}}')
    h.polls(2)
    assert h.transitions()[-1] == ("down", "up", "")
    state.write_text('{"Status":"running","Running":true,"Pid":0,"Health":{"Status":"unhealthy"}}')
    h.polls(3)
    assert h.transitions()[-1] == ("up", "down", "container")
    assert h.events[-1].details["reason"] == "container vllm is unhealthy"


def test_port_file_older_than_its_process_is_stale(engine: Engine, tmp_path: Path) -> None:
    port_file = tmp_path / "engine.port"
    port = free_port()
    port_file.write_text(f"{port}\n")
    os.utime(port_file, (time.time() - 3600, time.time() - 3600))  # left by an earlier run
    engine.start(port)  # listens on it, but did not write it
    h = Harness(ServiceConfig(name="svc", signature=SIG, port_file=port_file, startup_grace=0))
    h.polls(1)
    detail = h.watch.status()["checks"]["port_file"]["detail"]
    assert "stale port file" in detail and "written before pid" in detail
