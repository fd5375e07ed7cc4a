"""systemd's own checker (Debian's `systemd` package, systemd-analyze 252) accepts the rendered
units, system and user, with ExecStart= naming this installation's real inferwatch."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import require_tool
from inferwatch.install import unit

pytestmark = pytest.mark.integration


def verify(tmp_path: Path, text: str, *, user: bool) -> subprocess.CompletedProcess[str]:
    analyze = require_tool("systemd-analyze")
    unit_dir = tmp_path / ("user" if user else "system")
    unit_dir.mkdir()
    path = unit_dir / unit.UNIT_NAME
    path.write_text(text)
    runtime = tmp_path / "runtime"  # a user manager needs $XDG_RUNTIME_DIR to exist
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SYSTEMD_LOG_COLOR": "0"}
    return subprocess.run(
        [analyze, *(["--user"] if user else []), "verify", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def complaints(result: subprocess.CompletedProcess[str]) -> list[str]:
    """What systemd-analyze said about our unit (unknown keys, bad values, missing binaries)."""
    text = result.stdout + result.stderr
    return [line for line in text.splitlines() if unit.UNIT_NAME in line or "ExecStart" in line]


@pytest.mark.parametrize("user", [False, True], ids=["system", "user"])
def test_the_rendered_unit_verifies(tmp_path: Path, user: bool) -> None:
    command = unit.this_inferwatch()
    assert Path(command[0]).is_file()
    result = verify(tmp_path, unit.render(unit.template(), command, user=user), user=user)
    assert result.returncode == 0, result.stdout + result.stderr
    assert complaints(result) == []


def test_verify_catches_a_broken_unit(tmp_path: Path) -> None:
    """The check above can fail: a missing binary and a misspelt directive are reported."""
    text = unit.render(unit.template(), [str(tmp_path / "no-such-inferwatch")], user=False)
    result = verify(tmp_path, text.replace("ProtectHome=", "ProtectHomes="), user=False)
    assert result.returncode != 0
    said = "\n".join(complaints(result))
    assert "no-such-inferwatch" in said
    assert "ProtectHomes" in said
