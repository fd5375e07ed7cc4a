"""Reads one download as it is now: its directory, whether its downloader lives, its log's end.

Read only: it never signals, restarts or touches the downloader. Everything here blocks (a
directory walk, ``/proc``, ``systemctl``), so :meth:`DownloadProbe.observe` runs it in a worker
thread, and ``systemctl`` has a timeout. No ``systemctl`` here for a unit: :class:`NoData`.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from inferwatch.clock import Clock
from inferwatch.config.downloads import DownloadConfig
from inferwatch.errors import NoData

PARTIAL_SUFFIXES = (".incomplete", ".part", ".tmp")
MAX_ENTRIES = 200_000  # a model directory holds tens of files; a mistaken `/` stops here
LOG_TAIL_BYTES = 64 * 1024
INDEX_MAX_BYTES = 16 * 1024 * 1024
SYSTEMCTL_TIMEOUT_S = 5.0
UNIT_PROPERTIES = "LoadState,ActiveState,SubState,MainPID,ExecMainStatus,ExecMainCode,Result"
ALIVE_STATES = frozenset({"active", "activating", "deactivating", "reloading", "refreshing"})


@dataclass(frozen=True, slots=True)
class PartialFile:
    path: str  # relative to the download's directory
    size: int
    owner: str


@dataclass(frozen=True, slots=True)
class DirectoryScan:
    exists: bool
    total_bytes: int = 0  # every regular file, partial ones included (links are not followed)
    complete: tuple[str, ...] = ()  # relative paths of the files that are not partial
    partials: tuple[PartialFile, ...] = ()
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class DownloaderState:
    """Whether the downloader lives. ``identity`` tells a reused PID from the process first
    seen (its start time); ``exit_status``/``result`` come from systemd when it kept them."""

    alive: bool
    identity: str = ""
    exit_status: int | None = None
    result: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class DownloadObservation:
    at: float
    scan: DirectoryScan
    downloader: DownloaderState
    index_text: str | None = None
    log_tail: str | None = None  # read only once the downloader is gone
    problems: tuple[str, ...] = field(default=())


def owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def scan_directory(directory: Path) -> DirectoryScan:
    if not directory.is_dir():
        return DirectoryScan(exists=False)
    total = 0
    complete: list[str] = []
    partials: list[PartialFile] = []
    seen = 0
    for root, _dirs, files in os.walk(directory, onerror=lambda _e: None):
        base = Path(root)
        for name in files:
            seen += 1
            if seen > MAX_ENTRIES:
                return DirectoryScan(True, total, tuple(complete), tuple(partials), True)
            path = base / name
            try:
                st = path.lstat()
            except OSError:  # renamed or removed between listing and stat
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            total += st.st_size
            rel = str(path.relative_to(directory))
            if name.endswith(PARTIAL_SUFFIXES):
                partials.append(PartialFile(rel, st.st_size, owner_name(st.st_uid)))
            else:
                complete.append(rel)
    return DirectoryScan(True, total, tuple(sorted(complete)), tuple(partials))


def pid_state(pid: int) -> DownloaderState:
    """A zombie is gone: it has exited and only waits for its parent (``kill -0`` still works)."""
    try:
        proc = psutil.Process(pid)
        status = proc.status()
        identity = f"{proc.create_time():.2f}"
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return DownloaderState(False, detail=f"pid {pid} is gone")
    except psutil.AccessDenied:
        return DownloaderState(True, detail=f"pid {pid} exists (not ours to inspect)")
    if status == psutil.STATUS_ZOMBIE:
        return DownloaderState(False, identity, detail=f"pid {pid} is a zombie (exited)")
    return DownloaderState(True, identity, detail=f"pid {pid} {status}")


def pattern_state(pattern: re.Pattern[str]) -> DownloaderState:
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "cmdline", "status", "create_time"]):
        info = proc.info
        if info["pid"] == me or info["status"] == psutil.STATUS_ZOMBIE or not info["cmdline"]:
            continue
        if pattern.search(" ".join(info["cmdline"])):
            identity = f"{info['create_time']:.2f}"
            return DownloaderState(True, identity, detail=f"pid {info['pid']} matches")
    return DownloaderState(False, detail=f"no process matches {pattern.pattern!r}")


def unit_state(unit: str, user: bool) -> DownloaderState:
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        raise NoData("systemctl is not installed here: the download's unit cannot be read")
    cmd = [systemctl, *(["--user"] if user else []), "show", unit, f"--property={UNIT_PROPERTIES}"]
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"systemctl show {unit} took over {SYSTEMCTL_TIMEOUT_S:g}s") from None
    if done.returncode != 0:
        # no manager to ask (a container, no user session): the check cannot run here
        raise NoData(f"systemctl show {unit}: {done.stderr.strip() or done.returncode}")
    props = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    active = props.get("ActiveState", "")
    if active in ALIVE_STATES:
        return DownloaderState(True, props.get("MainPID", ""), detail=f"{unit} {active}")
    if props.get("LoadState") != "loaded":  # a transient unit that ended well is unloaded
        return DownloaderState(False, detail=f"{unit} is gone ({props.get('LoadState', '?')})")
    status = props.get("ExecMainStatus", "")
    return DownloaderState(
        False,
        exit_status=int(status) if status.isdigit() and props.get("ExecMainCode") != "0" else None,
        result=props.get("Result", ""),
        detail=f"{unit} {active}/{props.get('SubState', '')}",
    )


def read_tail(path: Path, limit: int) -> str | None:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return None


class DownloadProbe:
    """The reader of one ``downloads:`` entry."""

    def __init__(self, cfg: DownloadConfig, clock: Clock, timeout: float = 30.0) -> None:
        self.cfg = cfg
        self.clock = clock
        self.timeout = timeout
        self._pattern = re.compile(cfg.process_pattern) if cfg.process_pattern else None

    def downloader_state(self) -> DownloaderState:
        cfg = self.cfg
        if cfg.pid is not None:
            return pid_state(cfg.pid)
        if self._pattern is not None:
            return pattern_state(self._pattern)
        if cfg.unit is not None:
            return unit_state(cfg.unit, user=False)
        assert cfg.user_unit is not None
        return unit_state(cfg.user_unit, user=True)

    def read(self, with_log: bool) -> DownloadObservation:
        at = self.clock.time()
        downloader = self.downloader_state()  # first: a process that ends after the scan is
        scan = scan_directory(self.cfg.directory)  # judged on the next probes, not on this one
        index = None
        if self.cfg.index_file is not None:
            index_path = self.cfg.directory / self.cfg.index_file
            index = read_tail(index_path, INDEX_MAX_BYTES) if index_path.is_file() else None
        log = None
        if with_log and not downloader.alive and self.cfg.log is not None:
            log = read_tail(self.cfg.log, LOG_TAIL_BYTES)
        return DownloadObservation(at, scan, downloader, index, log)

    async def observe(self, with_log: bool = True) -> DownloadObservation:
        async with asyncio.timeout(self.timeout):
            return await asyncio.to_thread(self.read, with_log)
