"""The daemon runs under the unit's system-call filter: SystemCallFilter= (@system-service minus
@privileged, expanded by systemd-analyze 252 as systemd expands them), SystemCallErrorNumber=EPERM
and RestrictAddressFamilies=, applied with libseccomp as systemd applies them
(seccomp_launcher.py), on top of the unit's capabilities. Its sources read, it reloads, its
subprocesses start, it stops cleanly; and the filter bites: without bind() it cannot serve."""

from __future__ import annotations

import errno
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_tool, wait_until
from install.confined import ENGINE_LINES, UNIT, confined, records, start_confined, unit_caps

pytestmark = pytest.mark.integration

LAUNCHER = Path(__file__).with_name("seccomp_launcher.py")


def unit_values(key: str) -> list[str]:
    prefix = key + "="
    return [x[len(prefix) :] for x in UNIT.read_text().splitlines() if x.startswith(prefix)]


def syscall_groups() -> dict[str, list[str]]:
    analyze = require_tool("systemd-analyze")
    text = subprocess.run(
        [analyze, "syscall-filter"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    groups: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        word = line.strip()
        if line.startswith("@"):
            current = groups.setdefault(word, [])
        elif word and not word.startswith("#"):
            current.append(word)
    return groups


def expand(names: list[str], groups: dict[str, list[str]]) -> set[str]:
    out: set[str] = set()
    for name in names:
        out |= expand(groups[name], groups) if name.startswith("@") else {name}
    return out


def allowed_syscalls() -> set[str]:
    """The unit's filter lines in order: the first (an allow list) sets the default, a later
    ``~`` line removes from it (systemd.exec(5) SystemCallFilter=)."""
    groups = syscall_groups()
    lines = unit_values("SystemCallFilter")
    assert lines and not lines[0].startswith("~"), "the unit's filter starts as an allow list"
    allowed: set[str] = set()
    for line in lines:
        names = line.removeprefix("~").split()
        if line.startswith("~"):
            allowed -= expand(names, groups)
        else:
            allowed |= expand(names, groups)
    return allowed | {"execve", "exit", "exit_group", "getrlimit", "rt_sigreturn", "sigreturn"}


def filtered(tmp_path: Path, allowed: set[str]) -> list[str]:
    assert unit_values("SystemCallErrorNumber") == ["EPERM"]
    listing = tmp_path / "allowed-syscalls.txt"
    listing.write_text("\n".join(sorted(allowed)) + "\n")
    families = ",".join(unit_values("RestrictAddressFamilies")[0].split())
    return [sys.executable, str(LAUNCHER), str(listing), families, "--"]


def test_the_daemon_works_under_the_units_filter(tmp_path: Path) -> None:
    d = start_confined(tmp_path, unit_caps(), filtered(tmp_path, allowed_syscalls()))
    try:
        d.wait_ready()
        wait_until(lambda: records(d, "engine:e1") == len(ENGINE_LINES), 30, "the engine log")
        wait_until(lambda: records(d, "kernel") > 0, 30, "kernel records")
        log = tmp_path / "engine" / "engine.log"
        with log.open("a") as f:  # the tailer follows: inotify and stat under the filter
            f.write(ENGINE_LINES[0] + "\n")
        wait_until(lambda: records(d, "engine:e1") == len(ENGINE_LINES) + 1, 30, "a new line")
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "config reloaded" in d.log(), 30, "the reload")
        assert d.get("/api/v1/status").json()["problems"] == []
    finally:
        code, _ = d.terminate()
    assert code == 0, d.log()
    assert "Operation not permitted" not in d.log()


def test_subprocesses_start_under_the_filter(tmp_path: Path) -> None:
    """How the journald and docker sources start journalctl and docker logs."""
    script = (
        "import asyncio, sys\n"
        "async def main():\n"
        "    p = await asyncio.create_subprocess_exec(sys.executable, '-c', 'print(42)',"
        " stdout=asyncio.subprocess.PIPE)\n"
        "    out, _ = await p.communicate()\n"
        "    print(out.decode().strip(), await p.wait())\n"
        "asyncio.run(main())\n"
    )
    command = [*confined(unit_caps()), *filtered(tmp_path, allowed_syscalls())]
    result = subprocess.run(
        [*command, sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["42", "0"]


def test_the_filter_bites(tmp_path: Path) -> None:
    d = start_confined(tmp_path, unit_caps(), filtered(tmp_path, allowed_syscalls() - {"bind"}))
    try:
        assert d.proc.wait(60) == 1
    finally:
        d.kill()
    assert "cannot listen" in d.log() and "operation not permitted" in d.log().lower()


def test_other_address_families_are_refused(tmp_path: Path) -> None:
    """AF_VSOCK asks no privilege: without the filter it opens, or the kernel lacks it
    (EAFNOSUPPORT); with the filter it is refused (EPERM)."""
    probe = (
        "import socket\ntry:\n    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close()\n"
        "    print(0)\nexcept OSError as e:\n    print(e.errno)\n"
    )

    def errno_of(*wrap: str) -> int:
        command = [*confined(unit_caps()), *wrap, sys.executable, "-c", probe]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return int(result.stdout)

    assert errno_of() != errno.EPERM
    assert errno_of(*filtered(tmp_path, allowed_syscalls())) == errno.EPERM
