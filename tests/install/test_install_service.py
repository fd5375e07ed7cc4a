"""`inferwatch install-service` / `uninstall-service` on real files in a temporary unit
directory. systemctl is a recording stand-in on PATH: a test must never reload or stop the
service manager of the machine it runs on."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from conftest import REPO
from inferwatch.cli import main

EXAMPLE = REPO / "deploy" / "config.example.yaml"


def exec_start(unit_file: Path) -> list[str]:
    line = next(x for x in unit_file.read_text().splitlines() if x.startswith("ExecStart="))
    return line.removeprefix("ExecStart=").split()


@pytest.fixture
def systemctl_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    log = tmp_path / "systemctl.log"
    fake = bin_dir / "systemctl"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return log


def test_install_writes_a_unit_running_this_inferwatch_and_the_example_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    units, config = tmp_path / "units", tmp_path / "etc" / "config.yaml"
    code = main(
        ["install-service", "--unit-dir", str(units), "--config", str(config), "--no-systemctl"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    unit_file = units / "inferwatch.service"
    command = exec_start(unit_file)
    assert Path(command[0]).is_absolute() and Path(command[0]).is_file()
    assert Path(command[0]).parent == Path(sys.executable).parent or command[1:3] == [
        "-m",
        "inferwatch",
    ]
    assert command[-2:] == ["--config", str(config)]
    assert config.read_text() == EXAMPLE.read_text()
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE(unit_file.stat().st_mode) == 0o644
    assert f"wrote {unit_file}" in out
    assert "systemctl enable --now inferwatch" in out
    assert "journalctl -u inferwatch -f" in out


def test_an_existing_config_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("listen: 127.0.0.1:9999\n")
    args = ["install-service", "--unit-dir", str(tmp_path), "--config", str(config)]
    assert main([*args, "--no-systemctl"]) == 0
    assert config.read_text() == "listen: 127.0.0.1:9999\n"
    assert f"kept the existing config {config}" in capsys.readouterr().out


def test_an_invalid_config_is_reported_and_the_unit_still_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("listen: 127.0.0.1:9945\nengines:\n  - kind: vllm\n")
    code = main(
        ["install-service", "--unit-dir", str(tmp_path), "--config", str(config), "--no-systemctl"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert f"{config}:3:" in err and "engines[0].name" in err
    assert (tmp_path / "inferwatch.service").is_file()


def test_dry_run_prints_the_unit_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    args = ["install-service", "--dry-run", "--unit-dir", str(tmp_path), "--config", str(config)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "[Service]" in out and "Type=notify" in out
    assert list(tmp_path.iterdir()) == []


def test_systemctl_is_reloaded_and_uninstall_disables_first(
    tmp_path: Path, systemctl_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--unit-dir", str(tmp_path / "units")]
    config = ["--config", str(tmp_path / "config.yaml")]
    assert main(["install-service", *args, *config]) == 0
    assert systemctl_log.read_text().splitlines() == ["daemon-reload"]
    assert main(["uninstall-service", *args]) == 0
    assert systemctl_log.read_text().splitlines() == [
        "daemon-reload",
        "disable --now inferwatch.service",
        "daemon-reload",
    ]
    assert not (tmp_path / "units" / "inferwatch.service").exists()
    assert (tmp_path / "config.yaml").exists()  # config and state stay
    assert "removed" in capsys.readouterr().out


def test_user_units_go_to_the_users_manager(
    tmp_path: Path,
    systemctl_log: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert main(["install-service", "--user"]) == 0
    unit_file = tmp_path / "xdg" / "systemd" / "user" / "inferwatch.service"
    assert exec_start(unit_file)[-1] == "%E/inferwatch/config.yaml"
    assert (tmp_path / "xdg" / "inferwatch" / "config.yaml").read_text() == EXAMPLE.read_text()
    assert "CapabilityBoundingSet" not in unit_file.read_text()
    assert systemctl_log.read_text().splitlines() == ["--user daemon-reload"]
    out = capsys.readouterr().out
    assert "systemctl --user enable --now inferwatch" in out
    assert "journalctl --user -u inferwatch -f" in out
    assert main(["uninstall-service", "--user"]) == 0
    assert not unit_file.exists()
    assert systemctl_log.read_text().splitlines()[1:] == [
        "--user disable --now inferwatch.service",
        "--user daemon-reload",
    ]


def test_a_failing_systemctl_is_reported(
    tmp_path: Path, systemctl_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = Path(str(systemctl_log.parent / "fakebin" / "systemctl"))
    fake.write_text('#!/bin/sh\necho "System has not been booted with systemd" >&2\nexit 1\n')
    code = main(
        ["install-service", "--unit-dir", str(tmp_path), "--config", str(tmp_path / "c.yaml")]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "`systemctl daemon-reload` failed: System has not been booted with systemd" in err
    assert (tmp_path / "inferwatch.service").is_file()  # written: reload by hand and go on


def test_uninstall_without_a_unit_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["uninstall-service", "--unit-dir", str(tmp_path), "--no-systemctl"]) == 1
    assert "is not there" in capsys.readouterr().err


def test_a_unit_dir_that_cannot_be_written_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    args = ["install-service", "--unit-dir", str(blocker / "units")]
    assert main([*args, "--config", str(tmp_path / "c.yaml"), "--no-systemctl"]) == 1
    assert str(blocker / "units") in capsys.readouterr().err
