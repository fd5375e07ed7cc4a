"""One download wired end to end on a fake clock with real files and a real downloader process:
its verdict is one event and one count, the shipped rule pages on it once, and neither a restart
from the checkpoint nor hours down announces it again."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import psutil

from conftest import wait_until
from inferwatch.clock import FakeClock
from inferwatch.configfile import parse_config
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.pipeline.downloads import DownloadPolling
from inferwatch.promql.engine import evaluate
from inferwatch.store.tsdb import SeriesStore

FINISHED = (
    'increase(inferwatch_download_verdicts_total{verdict="finished"}[5m]) > 0 or '
    '(inferwatch_download_verdicts_total{verdict="finished"} unless '
    'inferwatch_download_verdicts_total{verdict="finished"} offset 5m)'
)


def config(directory: Path, pid: int) -> str:
    return (
        f"downloads:\n  - name: ok\n    directory: {directory}\n    pid: {pid}\n"
        "    expected_bytes: 2000\n"
    )


def fires(store: SeriesStore, t: float) -> bool:
    return bool(evaluate(FINISHED, store, t))


def test_a_finished_download_is_announced_once_across_restarts(tmp_path: Path) -> None:
    directory = tmp_path / "model"
    directory.mkdir()
    partial = directory / "a.safetensors.incomplete"
    partial.write_bytes(b"x" * 1000)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    cfg = parse_config(config(directory, proc.pid), "c.yaml").downloads[0]
    clock = FakeClock()
    store = SeriesStore(clock)
    events: list[Event] = []

    async def sink(got: list[Event]) -> None:
        events.extend(got)

    def probe(polling: DownloadPolling, times: int) -> None:
        for _ in range(times):
            clock.advance(2.0)
            store.tick()
            asyncio.run(polling.poll())

    polling = DownloadPolling(cfg, store, sink, clock)
    probe(polling, 3)
    partial.write_bytes(b"x" * 2000)
    partial.rename(directory / "a.safetensors")
    proc.kill()  # not reaped yet: a zombie, which is gone
    wait_until(lambda: psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE, 10, "a zombie")
    probe(polling, 2)
    assert polling.status()["state"] == "downloading"
    probe(polling, 1)
    assert [e.type for e in events] == ["download_finished"]
    assert polling.status()["state"] == "finished"
    assert fires(store, clock.time())
    proc.wait()

    # a restart from the checkpoint a minute later, then one after hours down
    for downtime in (60.0, 3 * 3600.0):
        clock.advance(downtime)  # the daemon builds its sources before its first store tick
        polling = DownloadPolling(cfg, store, sink, clock, polling.checkpoint())
        for _ in range(200):
            probe(polling, 1)
            # (a minute after the verdict the alert still fires: the same one, restored)
            assert downtime < 3600 or not fires(store, clock.time())
        assert [e.type for e in events] == ["download_finished"]
    series = store.get(
        "inferwatch_download_verdicts_total", make_labels({"download": "ok", "verdict": "finished"})
    )
    assert series is not None and series.last_real() is not None
    assert series.last_real()[1] == 1.0  # type: ignore[index]


def test_the_status_shape(tmp_path: Path) -> None:
    cfg = parse_config(config(tmp_path, 999_999_999 % 4_000_000 + 1), "c.yaml").downloads[0]
    clock = FakeClock()
    store = SeriesStore(clock)

    async def sink(_: list[Event]) -> None:
        return None

    polling = DownloadPolling(cfg, store, sink, clock)
    assert polling.name == "download:ok" and polling.interval == 2.0
    status = polling.status()
    assert status["state"] == "waiting" and status["bytes"] is None
    asyncio.run(polling.poll())
    status = polling.status()
    assert status["bytes"] == 0 and status["expected_bytes"] == 2000
    assert set(status["rate_bytes_per_second"]) == {"1m", "10m"}


def test_a_verdict_only_in_the_event_log_is_held_without_news(tmp_path: Path) -> None:
    """Killed between writing the verdict's event and the next snapshot: the restart takes the
    verdict from the event log and counts it as a baseline, never as news."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    cfg = parse_config(config(tmp_path, proc.pid), "c.yaml").downloads[0]
    clock = FakeClock()
    store = SeriesStore(clock)
    events: list[Event] = []

    async def sink(got: list[Event]) -> None:
        events.extend(got)

    row = {
        "type": "download_failed",
        "at": clock.time() - 10,
        "source": "download:ok",
        "key": "download:ok:failed:0:1",
        "details": {"target": f"pid:{proc.pid}", "run": 0, "reason": "partial files left: x"},
    }
    polling = DownloadPolling(cfg, store, sink, clock, None, [row])
    for _ in range(5):
        clock.advance(2.0)
        store.tick()
        asyncio.run(polling.poll())
    assert events == [] and polling.status()["state"] == "failed"
    failed = 'inferwatch_download_verdicts_total{verdict="failed"}'
    assert evaluate(f"{failed} unless {failed} offset 5m", store, clock.time()) == []
    assert evaluate(failed, store, clock.time())[0].value == 1.0  # type: ignore[index,union-attr]


def test_a_live_downloader_that_writes_nothing_stalls_once(tmp_path: Path) -> None:
    (tmp_path / "a.incomplete").write_bytes(b"x" * 10)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        text = f"downloads:\n  - {{name: s, directory: {tmp_path}, pid: {proc.pid}, stall_after: 1m}}\n"
        cfg = parse_config(text, "c.yaml").downloads[0]
        clock = FakeClock()
        store = SeriesStore(clock)
        events: list[Event] = []

        async def sink(got: list[Event]) -> None:
            events.extend(got)

        polling = DownloadPolling(cfg, store, sink, clock)
        for _ in range(29):  # 58 s without a byte: not yet
            clock.advance(2.0)
            asyncio.run(polling.poll())
        assert events == [] and polling.status()["state"] == "downloading"
        for _ in range(30):
            clock.advance(2.0)
            asyncio.run(polling.poll())
        assert [e.type for e in events] == ["download_stalled"]
        assert polling.status()["state"] == "stalled"
        (tmp_path / "a.incomplete").write_bytes(b"x" * 20)
        clock.advance(2.0)
        asyncio.run(polling.poll())
        assert polling.status()["state"] == "downloading" and len(events) == 1
    finally:
        proc.kill()
        proc.wait()
