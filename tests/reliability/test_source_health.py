"""Source health both ways (hardening issue, item 9): a kernel log replaced by a FIFO or a
directory stayed "starting" (up) with no alert; a kernel log missing at start and created later
never cleared ``InferwatchKernelLogUnreadable``.

A real daemon follows a real kern.log (``kernel.source: file``) and an engine log. The shipped
internal rules are loaded from a copy whose ``for:`` is 2 s instead of minutes, so the alerts'
firing and clearing are seen within the test's bounds; the expressions are the shipped ones.
Unreadable by permission: the files are made mode 000; as root the daemon runs under ``setpriv``
with every capability dropped, so the permission bits hold for it too."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import REPO, wait_until
from integration.daemon_proc import DaemonProc, start_daemon
from reliability.attack_table import AttackRow

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
LINE = "Dec  2 01:00:00 hyperion kernel: usb 1-1: new device\n"


def setup(tmp_path: Path, kern: Path, engine_log: Path) -> Path:
    rules = tmp_path / "inferwatch-fast.yaml"
    shipped = (REPO / "rules" / "inferwatch.yaml").read_text()
    rules.write_text(re.sub(r"for: \d+m", "for: 2s", shipped))
    config = tmp_path / "c.yaml"
    config.write_text(
        f"gpus: {{backend: 'off'}}\nkernel: {{source: file, path: '{kern}'}}\n"
        f"engines:\n  - {{name: llm, log: '{engine_log}'}}\n"
        f"rule_files: ['{rules}']\n"
    )
    return config


def source(d: DaemonProc, name: str) -> dict[str, str]:
    found: dict[str, str] = d.get("/api/v1/status").json()["sources"].get(name, {})
    return found


def alert_state(d: DaemonProc, name: str) -> str:
    for a in d.get("/api/v1/alerts").json()["alerts"]:
        if a["labels"].get("alertname") == name and a["state"] != "resolved":
            return str(a["state"])
    return "inactive"


def source_up(d: DaemonProc, name: str) -> float | None:
    for line in d.metrics().splitlines():
        if line.startswith(f'inferwatch_source_up{{source="{name}"'):
            return float(line.rsplit(" ", 1)[1])
    return None


REPLACE: dict[str, Callable[[Path], None]] = {
    "fifo": lambda p: (p.unlink(), os.mkfifo(p)),  # type: ignore[dict-item]
    "directory": lambda p: (p.unlink(), p.mkdir()),  # type: ignore[dict-item]
    # created mode 000 (never readable for a moment: the watcher would open it at once)
    "mode 000 file": lambda p: (p.unlink(), os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0))),  # type: ignore[dict-item]
}
REASON = {"fifo": "a FIFO", "directory": "a directory", "mode 000 file": "Permission denied"}


def unprivileged() -> tuple[str, ...]:
    """As root, drop every capability (CAP_DAC_OVERRIDE included): mode 000 then refuses."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop root's capabilities")
    return (setpriv, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--")


@pytest.mark.parametrize("kind", sorted(REPLACE))
def test_a_log_replaced_by_something_unreadable_is_down_and_alerted(
    tmp_path: Path, kind: str, attack: AttackRow
) -> None:
    attack.describe(
        f"kernel log and engine log replaced by a {kind} while running",
        "sources up 0 with the reason, InferwatchKernelLogUnreadable and InferwatchSourceDown "
        "fire, the daemon keeps serving (never blocked)",
    )
    kern, engine_log = tmp_path / "kern.log", tmp_path / "engine.log"
    kern.write_text(LINE)
    engine_log.write_text("INFO 12-02 01:00:00 engine starting\n")
    wrap = unprivileged() if kind.startswith("mode") else ()
    d = start_daemon(tmp_path, "--config", str(setup(tmp_path, kern, engine_log)), wrap=wrap)
    try:
        d.wait_ready(60)
        wait_until(lambda: source(d, "kernel").get("state") == "up", 30, "the kernel log read")
        REPLACE[kind](kern)
        REPLACE[kind](engine_log)
        wait_until(
            lambda: source(d, "kernel").get("state") == "error", 30, "the kernel source down"
        )
        wait_until(lambda: source(d, "engine:llm").get("state") == "error", 30, "the engine down")
        kernel_alert = wait_until(
            lambda: alert_state(d, "InferwatchKernelLogUnreadable") == "firing", 60, "the alert"
        )
        engine_alert = wait_until(
            lambda: alert_state(d, "InferwatchSourceDown") == "firing", 60, "SourceDown"
        )
        reason = source(d, "kernel")["reason"]
        attack.saw(
            f"kernel up {source_up(d, 'kernel')}: {reason!r}; engine log up "
            f"{source_up(d, 'engine:llm')}; KernelLogUnreadable "
            f"{'firing' if kernel_alert else '?'}, SourceDown {'firing' if engine_alert else '?'}"
        )
        assert REASON[kind] in reason
        assert source_up(d, "kernel") == 0.0 and source_up(d, "engine:llm") == 0.0
        assert d.get("/healthz").status_code == 200
    finally:
        d.terminate()


def test_a_kernel_log_created_after_start_clears_the_alert(
    tmp_path: Path, attack: AttackRow
) -> None:
    attack.describe(
        "kernel log missing at start, created later",
        "InferwatchKernelLogUnreadable fires while missing and clears once the file exists",
    )
    kern, engine_log = tmp_path / "kern.log", tmp_path / "engine.log"
    engine_log.write_text("")
    d = start_daemon(tmp_path, "--config", str(setup(tmp_path, kern, engine_log)))
    try:
        d.wait_ready(60)
        wait_until(
            lambda: alert_state(d, "InferwatchKernelLogUnreadable") == "firing", 60, "the alert"
        )
        attack.saw(f"missing: {source(d, 'kernel').get('state')}, alert firing")
        kern.write_text("")  # an empty file: nothing to read yet, but readable
        wait_until(lambda: source(d, "kernel").get("state") == "up", 90, "the kernel source up")
        wait_until(
            lambda: alert_state(d, "InferwatchKernelLogUnreadable") == "inactive", 30, "clearing"
        )
        attack.saw(f"created: source up {source_up(d, 'kernel')}, alert cleared")
    finally:
        d.terminate()
