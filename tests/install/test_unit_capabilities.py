"""The unit's capability bounding set is enough, and each capability is needed: the real daemon,
run as root under exactly that set (setpriv, with no_new_privs as the unit sets it), reads
/dev/kmsg and an engine log that belongs to another user; without CAP_SYSLOG and
CAP_DAC_READ_SEARCH it reads neither. CAP_SYS_PTRACE reads where another user's descriptors
point (/proc/PID/fd/N: what says which process owns a socket, i.e. a port)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from conftest import IN_CI, REPO, free_port, require_tool, wait_until
from integration.daemon_proc import DaemonProc

pytestmark = pytest.mark.integration

OTHER_UID = 4242  # a user that owns the engine log; no account needed
UNIT = REPO / "deploy" / "systemd" / "inferwatch.service"
ENGINE_LINES = [
    line
    for line in (REPO / "tests/fixtures/corpus/engine-lines.txt").read_text().splitlines()
    if "Avg prompt throughput" in line
][:3]


def unit_caps() -> set[str]:
    line = next(x for x in UNIT.read_text().splitlines() if x.startswith("CapabilityBoundingSet="))
    return set(line.split("=", 1)[1].split())


def confined(caps: Iterable[str]) -> list[str]:
    setpriv = require_tool("setpriv")
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI runs as root: the capability checks need it")
        pytest.skip("needs root: it runs the daemon as root with fewer capabilities")
    keep = ",".join("+" + c.removeprefix("CAP_").lower() for c in sorted(caps))
    return [setpriv, f"--bounding-set=-all,{keep}", "--no-new-privs", "--"]


def engine_log_of_another_user(tmp_path: Path) -> Path:
    directory = tmp_path / "engine"  # 0700, not root's: only CAP_DAC_READ_SEARCH gets in
    directory.mkdir()
    log = directory / "engine.log"
    log.write_text("\n".join(ENGINE_LINES) + "\n")
    log.chmod(0o600)
    directory.chmod(0o700)
    for path in (log, directory):
        os.chown(path, OTHER_UID, OTHER_UID)
    return log


def start_confined(tmp_path: Path, caps: Iterable[str]) -> DaemonProc:
    prefix = confined(caps)
    log = engine_log_of_another_user(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(
        "kernel: {source: kmsg}\ngpus: {backend: 'off'}\n"
        f"engines:\n  - name: e1\n    kind: vllm\n    log: {log}\n"
    )
    port = free_port()
    state = tmp_path / "state"
    out_path = tmp_path / "daemon.log"
    cmd = [*prefix, sys.executable, "-m", "inferwatch", "run", "--config", str(config)]
    cmd += ["--listen", f"127.0.0.1:{port}", "--state-dir", str(state)]
    with out_path.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    return DaemonProc(proc, port, out_path, state)


def sources(d: DaemonProc) -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = d.get("/api/v1/status").json()["sources"]
    return found


def records(d: DaemonProc, source: str) -> float:
    prefix = f'inferwatch_records_total{{source="{source}"}} '
    lines = [x for x in d.metrics().splitlines() if x.startswith(prefix)]
    return float(lines[0].removeprefix(prefix)) if lines else 0.0


def test_the_unit_names_three_capabilities() -> None:
    assert unit_caps() == {"CAP_SYSLOG", "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"}


def test_with_the_units_capabilities_kmsg_and_other_users_logs_are_read(tmp_path: Path) -> None:
    d = start_confined(tmp_path, unit_caps())
    try:
        d.wait_ready()
        wait_until(lambda: records(d, "engine:e1") == len(ENGINE_LINES), 30, "the engine log")
        wait_until(lambda: records(d, "kernel") > 0, 30, "kernel records")
        assert sources(d)["kernel"]["state"] == "up"
    finally:
        code, _ = d.terminate()
    assert code == 0


def test_without_syslog_and_dac_read_search_both_are_out_of_reach(tmp_path: Path) -> None:
    d = start_confined(tmp_path, unit_caps() - {"CAP_SYSLOG", "CAP_DAC_READ_SEARCH"})
    try:
        d.wait_ready()

        def blind() -> bool:
            s = sources(d)
            return all(s.get(n, {}).get("state") == "no_data" for n in ("kernel", "engine:e1"))

        wait_until(blind, 30, "both sources to report no data")
        assert "Operation not permitted" in str(sources(d)["kernel"]["reason"])
        assert records(d, "engine:e1") == 0
    finally:
        code, _ = d.terminate()
    assert code == 0


@pytest.mark.parametrize("with_ptrace", [True, False])
def test_another_users_proc_fd_links_need_sys_ptrace(with_ptrace: bool) -> None:
    caps = unit_caps() if with_ptrace else unit_caps() - {"CAP_SYS_PTRACE"}
    prefix = confined(caps)
    setpriv = require_tool("setpriv")
    owner = subprocess.Popen(
        [setpriv, f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", "sleep", "60"]
    )
    try:
        fd_dir = f"/proc/{owner.pid}/fd"
        wait_until(lambda: os.stat(f"/proc/{owner.pid}").st_uid == OTHER_UID, 10, "setpriv")
        # listing fd/ takes only CAP_DAC_READ_SEARCH; following a link takes ptrace access
        probe = [*prefix, sys.executable, "-c", f"import os; print(os.readlink({fd_dir!r} + '/0'))"]
        result = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    finally:
        owner.kill()
        owner.wait(10)
    if with_ptrace:
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip()  # e.g. /dev/null or pipe:[…]
    else:
        assert result.returncode != 0
        assert "PermissionError" in result.stderr
