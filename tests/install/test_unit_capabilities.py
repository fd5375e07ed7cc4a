"""The unit's capability bounding set is enough, and each capability is needed: the real daemon,
run as root under exactly that set (setpriv, with no_new_privs as the unit sets it), reads
/dev/kmsg and an engine log that belongs to another user; without CAP_SYSLOG and
CAP_DAC_READ_SEARCH it reads neither. CAP_SYS_PTRACE reads where another user's descriptors
point (/proc/PID/fd/N: what says which process owns a socket, i.e. a port)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_tool, wait_until
from install.confined import (
    ENGINE_LINES,
    OTHER_UID,
    confined,
    records,
    sources,
    start_confined,
    unit_caps,
)

pytestmark = pytest.mark.integration


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
