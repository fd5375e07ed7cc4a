"""The state directory belongs to one daemon at a time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferwatch.statedir import LOCK_FILE, StateDirInUse, lock_state_dir


def test_a_second_holder_is_refused_and_named(tmp_path: Path) -> None:
    first = lock_state_dir(tmp_path)
    child = subprocess.run(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from inferwatch.statedir import lock_state_dir\n"
         "try:\n    lock_state_dir(Path(sys.argv[1]))\nexcept Exception as e:\n"
         "    print(e); sys.exit(3)", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert child.returncode == 3
    assert f"pid {os.getpid()}" in child.stdout and "in use" in child.stdout
    assert (tmp_path / LOCK_FILE).stat().st_mode & 0o777 == 0o600
    first.release()
    lock_state_dir(tmp_path).release()  # free again once released (or the holder died)


def test_one_process_cannot_take_it_twice_either(tmp_path: Path) -> None:
    lock = lock_state_dir(tmp_path)
    with pytest.raises(StateDirInUse):
        lock_state_dir(tmp_path)  # flock is per open file: a second open is a second holder
    lock.release()
