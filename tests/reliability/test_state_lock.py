"""Two daemons on one state dir used to both run and both page (hardening issue, item 10): the
second now refuses to start and names the first; after a kill -9 of the first, a new one starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import wait_until
from integration.daemon_proc import start_daemon
from reliability.attack_table import AttackRow

pytestmark = [pytest.mark.integration]
CONFIG = "gpus: {backend: 'off'}\nkernel: {source: 'off'}\n"


def test_a_second_daemon_on_the_same_state_dir_refuses_to_start(
    tmp_path: Path, attack: AttackRow
) -> None:
    attack.describe(
        "a second daemon on the same state dir; then kill -9 of the first and a third",
        "the second exits 1 naming the first; the third starts",
    )
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG)
    state = tmp_path / "state"
    (tmp_path / "a").mkdir()
    first = start_daemon(tmp_path / "a", "--config", str(config), state_dir=state)
    try:
        first.wait_ready()
        (tmp_path / "b").mkdir()
        second = start_daemon(tmp_path / "b", "--config", str(config), state_dir=state)
        code = second.proc.wait(60)
        attack.saw(f"second exited {code}")
        assert code == 1
        assert f"in use by another inferwatch daemon (pid {first.proc.pid})" in second.log()
        assert first.get("/healthz").status_code == 200  # the first one never noticed
        first.kill()  # kill -9: the kernel drops the lock with the process
        (tmp_path / "c").mkdir()
        third = start_daemon(tmp_path / "c", "--config", str(config), state_dir=state)
        try:
            third.wait_ready()
            wait_until(lambda: third.get("/healthz").status_code == 200, 30, "the third daemon")
            attack.saw("the third started after kill -9 of the first")
        finally:
            third.terminate()
    finally:
        first.kill()
