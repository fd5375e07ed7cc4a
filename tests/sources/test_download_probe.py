"""The download probe on real files and real processes: bytes with partial files, their owner,
a zombie is gone, a command-line pattern, a bounded log tail; no systemd manager: NoData."""

from __future__ import annotations

import asyncio
import os
import pwd
import re
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from conftest import wait_until
from inferwatch.clock import FakeClock
from inferwatch.config.downloads import DownloadConfig
from inferwatch.errors import NoData
from inferwatch.sources.download_probe import (
    DownloadProbe,
    pattern_state,
    pid_state,
    read_tail,
    scan_directory,
    unit_state,
)


def test_scan_counts_partial_files_and_their_owner(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(b"{}")
    nested = tmp_path / ".cache" / "huggingface" / "download"
    nested.mkdir(parents=True)
    (nested / "model-00001.safetensors.incomplete").write_bytes(b"x" * 1000)
    (tmp_path / "b.part").write_bytes(b"x" * 10)
    (tmp_path / "link").symlink_to(tmp_path / "config.json")
    scan = scan_directory(tmp_path)
    assert scan.exists and scan.total_bytes == 1012
    assert scan.complete == ("config.json",)
    me = pwd.getpwuid(os.getuid()).pw_name
    assert sorted((p.path, p.owner) for p in scan.partials) == [
        (".cache/huggingface/download/model-00001.safetensors.incomplete", me),
        ("b.part", me),
    ]
    assert not scan_directory(tmp_path / "missing").exists


def test_a_zombie_is_gone_and_a_live_process_is_alive() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = pid_state(proc.pid)
        assert alive.alive and alive.identity
        assert pattern_state(re.compile(r"time\.sleep\(60\)")).alive
        proc.kill()
        wait_until(lambda: psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE, 10)
        os.kill(proc.pid, 0)  # kill -0 still succeeds on a zombie ...
        assert not pid_state(proc.pid).alive  # ... which is gone all the same
    finally:
        proc.kill()
        proc.wait()
    assert not pid_state(proc.pid).alive


def test_log_tail_is_bounded(tmp_path: Path) -> None:
    log = tmp_path / "dl.log"
    log.write_text("a" * 100_000 + "\nPermissionError: [Errno 13]\n")
    tail = read_tail(log, 1000)
    assert tail is not None and len(tail) == 1000 and tail.endswith("[Errno 13]\n")
    assert read_tail(tmp_path / "none", 10) is None


def test_no_manager_to_ask_is_no_data() -> None:
    env_bus = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    if env_bus or Path(f"/run/user/{os.getuid()}/bus").exists():
        pytest.skip("a user manager runs here")
    with pytest.raises(NoData):
        unit_state("nvfp4-download", user=True)


def test_observe_reads_the_log_only_once_the_downloader_is_gone(tmp_path: Path) -> None:
    log = tmp_path / "dl.log"
    log.write_text("boom\n")
    cfg = DownloadConfig(name="m", directory=tmp_path, pid=os.getpid(), log=log)
    obs = asyncio.run(DownloadProbe(cfg, FakeClock(5.0)).observe())
    assert obs.at == 5.0 and obs.downloader.alive and obs.log_tail is None
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    cfg = DownloadConfig(name="m", directory=tmp_path, pid=proc.pid, log=log)
    obs = asyncio.run(DownloadProbe(cfg, FakeClock(5.0)).observe())
    assert not obs.downloader.alive and obs.log_tail == "boom\n"


def fake_systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    """A real ``systemctl`` program first on PATH that answers ``show`` as ``body`` says."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    program = bin_dir / "systemctl"
    program.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "calls"}\n{body}\n')
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return tmp_path / "calls"


def test_unit_states_from_systemctl_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_systemctl(
        tmp_path, monkeypatch, "printf 'LoadState=loaded\\nActiveState=active\\nMainPID=77\\n'"
    )
    running = unit_state("nvfp4-download", user=True)
    assert running.alive and running.identity == "77"
    assert calls.read_text().split()[:3] == ["--user", "show", "nvfp4-download"]
    fake_systemctl(
        tmp_path, monkeypatch,
        "printf 'LoadState=loaded\\nActiveState=failed\\nSubState=failed\\n"
        "ExecMainCode=1\\nExecMainStatus=1\\nResult=exit-code\\n'",
    )  # fmt: skip
    failed = unit_state("dl.service", user=False)
    assert (failed.alive, failed.exit_status, failed.result) == (False, 1, "exit-code")
    fake_systemctl(tmp_path, monkeypatch, "printf 'LoadState=not-found\\nActiveState=inactive\\n'")
    gone = unit_state("dl.service", user=False)
    assert not gone.alive and gone.exit_status is None and gone.result == ""
    fake_systemctl(tmp_path, monkeypatch, "echo 'Failed to connect to bus' >&2; exit 1")
    with pytest.raises(NoData):
        unit_state("dl.service", user=True)


def test_a_hung_systemctl_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_systemctl(tmp_path, monkeypatch, "exec sleep 30")
    monkeypatch.setattr("inferwatch.sources.download_probe.SYSTEMCTL_TIMEOUT_S", 0.3)
    with pytest.raises(TimeoutError):
        unit_state("dl.service", user=False)


def test_no_systemctl_is_no_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NoData, match="systemctl is not installed"):
        unit_state("dl.service", user=False)
