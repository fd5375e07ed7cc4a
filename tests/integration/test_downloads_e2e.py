"""Downloads watched by the real daemon, with real downloader processes and a real webhook sink:
one that finishes pages ``DownloadFinished`` once, one that dies with a partial file and a
PermissionError pages ``DownloadFailed`` once, and neither is announced again after a SIGTERM or
a kill -9 and a restart. (Hours down: tests/pipeline/test_downloads_pipeline.py, on a fake
clock.)"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import wait_until
from integration.daemon_proc import DaemonProc, start_daemon
from integration.webhook_sink import Sink, running_sink

pytestmark = pytest.mark.integration

WRITER = """
import os, sys, time
directory, go, chunks, fail = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "fail"
while not os.path.exists(go):
    time.sleep(0.05)
partial = os.path.join(directory, "model-00001-of-00001.safetensors.incomplete")
with open(partial, "wb") as f:
    for i in range(chunks):
        f.write(b"\\0" * 1_000_000)
        f.flush()
        print(f"wrote chunk {i + 1}", flush=True)
        time.sleep(1.0)
if fail:
    print("Traceback (most recent call last):", flush=True)
    print(f"PermissionError: [Errno 13] Permission denied: {partial!r}", flush=True)
    sys.exit(1)
os.rename(partial, partial[: -len(".incomplete")])
print("done", flush=True)
"""


@pytest.fixture
def sink() -> Iterator[Sink]:
    yield from running_sink()


def writer(directory: Path, go: Path, chunks: int, mode: str, log: Path) -> subprocess.Popen[bytes]:
    directory.mkdir()
    with log.open("wb") as out:
        cmd = [sys.executable, "-c", WRITER, str(directory), str(go), str(chunks), mode]
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)


def downloads_done(d: DaemonProc) -> bool:
    rows = {r["name"]: r for r in d.get("/api/v1/status").json().get("downloads", [])}
    return (
        rows.get("ok", {}).get("state") == "finished"
        and rows.get("bad", {}).get("state") == "failed"
    )


def test_downloads_finish_and_fail_once_across_restarts(tmp_path: Path, sink: Sink) -> None:
    go = tmp_path / "go"
    ok = writer(tmp_path / "ok", go, 6, "ok", tmp_path / "ok.log")
    bad = writer(tmp_path / "bad", go, 2, "fail", tmp_path / "bad.log")
    config = tmp_path / "c.yaml"
    config.write_text(
        "gpus:\n  backend: 'off'\nkernel:\n  source: 'off'\n"
        "route:\n  receiver: hook\n  group_by: ['...']\n  group_wait: 0s\n"
        "  group_interval: 10s\n"
        f"receivers:\n  - name: hook\n    webhook_configs:\n"
        f"      - url: http://127.0.0.1:{sink.port}/hook\n"
        "downloads:\n"
        f"  - name: ok\n    directory: {tmp_path / 'ok'}\n    pid: {ok.pid}\n"
        "    expected_bytes: 6000000\n"
        f"  - name: bad\n    directory: {tmp_path / 'bad'}\n    pid: {bad.pid}\n"
        f"    log: {tmp_path / 'bad.log'}\n"
    )
    d = start_daemon(tmp_path, "--config", str(config))
    try:
        d.wait_ready()
        started = time.time()
        go.touch()
        ((at, finished),) = wait_until(
            lambda: sink.alerts("DownloadFinished"), 30, "DownloadFinished"
        )
        assert at - started < 30
        assert finished["status"] == "firing" and finished["labels"]["download"] == "ok"
        assert finished["labels"]["severity"] == "info"
        ((_, failed),) = wait_until(lambda: sink.alerts("DownloadFailed"), 30, "DownloadFailed")
        assert failed["labels"]["download"] == "bad"
        assert failed["labels"]["severity"] == "critical"
        assert "PermissionError: [Errno 13]" in failed["annotations"]["diagnosis"]
        assert "owned by" in failed["annotations"]["diagnosis"]
        assert "partial files left" in failed["annotations"]["summary"]
        assert ok.wait(10) == 0 and bad.wait(10) == 1
        metrics = d.metrics()
        assert 'inferwatch_download_bytes{download="ok"} 6e+06' in metrics or (
            'inferwatch_download_bytes{download="ok"} 6000000' in metrics
        )
        assert 'inferwatch_download_expected_bytes{download="ok"}' in metrics
        assert 'inferwatch_download_state{download="bad",state="failed"} 1' in metrics
        # killed as soon as the messages left: the verdicts may be in the event log only
        wait_until(lambda: d.get("/api/v1/status").json()["notify"]["outbox_pending"] == 0, 30)
        d.kill()
        for stop in ("term", "kill", "term"):
            d = start_daemon(tmp_path, "--config", str(config), state_dir=d.state_dir)
            d.wait_ready()
            wait_until(lambda d=d: downloads_done(d), 30, "the downloads' state after a restart")
            time.sleep(8)  # four probes and eight rule evaluations: an observation window
            if stop == "kill":
                d.kill()
            else:
                assert d.terminate()[0] == 0
    finally:
        d.kill()
        ok.kill()
        bad.kill()
    assert len(sink.alerts("DownloadFinished")) == 1
    assert len(sink.alerts("DownloadFailed")) == 1
    assert sink.alerts("DownloadStalled") == []
