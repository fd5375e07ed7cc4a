"""The real daemon as the unit runs it, without systemd: as root under the unit's capability
bounding set (setpriv, no_new_privs), optionally wrapped in more (the unit's seccomp filter),
with a config reading /dev/kmsg and an engine log that belongs to another user."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from conftest import IN_CI, REPO, free_port, require_tool
from integration.daemon_proc import DaemonProc

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


def start_confined(tmp_path: Path, caps: Iterable[str], wrap: Sequence[str] = ()) -> DaemonProc:
    prefix = [*confined(caps), *wrap]
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
