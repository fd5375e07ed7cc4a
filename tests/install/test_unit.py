"""The shipped unit file and its rendering for one installation (no systemd needed here;
tests/install/test_unit_verify.py runs systemd-analyze on the result)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conftest import REPO
from inferwatch.install import unit

SHIPPED = REPO / "deploy" / "systemd" / "inferwatch.service"


def directives(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line[:1].isalpha() and "=" in line:
            key, value = line.split("=", 1)
            found.setdefault(key, []).append(value)
    return found


def test_the_template_is_the_checkouts_deploy_file() -> None:
    assert unit.template() == SHIPPED.read_text()


def test_the_unit_has_what_the_deployment_needs() -> None:
    d = directives(SHIPPED.read_text())
    assert d["Type"] == ["notify"]  # systemd 252: no notify-reload
    assert d["WatchdogSec"] and d["Restart"] == ["on-failure"]
    assert d["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert d["StateDirectory"] == ["inferwatch"]
    assert d["ConfigurationDirectory"] == ["inferwatch"]
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "read-only",
        "PrivateTmp": "yes",
        "ProtectKernelTunables": "yes",
    }.items():
        assert d[key] == [value], key
    assert set(d["RestrictAddressFamilies"][0].split()) >= {"AF_UNIX", "AF_INET", "AF_INET6"}
    assert "@system-service" in d["SystemCallFilter"]
    caps = {"CAP_SYSLOG", "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"}
    assert set(d["CapabilityBoundingSet"][0].split()) == caps
    assert set(d["AmbientCapabilities"][0].split()) == caps
    assert d["ExecStart"][0].split()[1:] == ["run", "--config", "%E/inferwatch/config.yaml"]


@pytest.mark.parametrize(
    ("directive", "why"),
    [
        ("ProtectKernelLogs", "hides /dev/kmsg and removes CAP_SYSLOG"),
        ("PrivateDevices", "hides /dev/nvidia* and /dev/kmsg"),
        ("DeviceAllow", "a device list fixed at start misses a late NVIDIA driver"),
        ("DevicePolicy", "same"),
        ("ProtectClock", "implies DeviceAllow=char-rtc"),
        ("ProtectProc", "hides other users' processes"),
        ("ProcSubset", "hides /proc/net and /proc/driver"),
        ("DynamicUser", "a transient non-root user: no docker socket, no root-owned logs"),
        ("MemoryDenyWriteExecute", "ctypes callbacks"),
    ],
)
def test_nothing_that_would_blind_a_source(directive: str, why: str) -> None:
    assert directive not in directives(SHIPPED.read_text()), why


def test_every_directive_says_why() -> None:
    lines = SHIPPED.read_text().splitlines()
    for i, line in enumerate(lines):
        if line[:1].isalpha() and "=" in line:
            assert lines[i - 1].startswith("#"), f"line {i + 1} has no comment: {line}"


def test_a_system_unit_changes_only_exec_start() -> None:
    text = unit.render(unit.template(), ["/opt/iw/bin/inferwatch"], user=False)
    old, new = SHIPPED.read_text().splitlines(), text.splitlines()
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    assert changed == [
        (
            "ExecStart=/usr/local/bin/inferwatch run --config %E/inferwatch/config.yaml",
            "ExecStart=/opt/iw/bin/inferwatch run --config %E/inferwatch/config.yaml",
        )
    ]


def test_a_user_unit_leaves_out_what_only_the_system_manager_applies() -> None:
    text = unit.render(unit.template(), ["/home/a/.venv/bin/inferwatch"], user=True)
    d = directives(text)
    assert not unit.SYSTEM_ONLY & d.keys()
    assert d["WantedBy"] == ["default.target"]
    assert d["Type"] == ["notify"] and d["SystemCallFilter"] and d["NoNewPrivileges"] == ["yes"]
    assert d["ExecStart"] == ["/home/a/.venv/bin/inferwatch run --config %E/inferwatch/config.yaml"]
    assert "CAP_SYSLOG:" not in text  # the comment of a dropped directive goes with it
    assert text.startswith("# Rendered for a user's service manager")


def test_exec_start_words_are_quoted_for_systemd() -> None:
    line = unit.exec_start(["/opt/my tools/$HOME/50%/inferwatch"], "/etc/iw/a b.yaml")
    assert line == (
        'ExecStart="/opt/my tools/$$HOME/50%%/inferwatch" run --config "/etc/iw/a b.yaml"'
    )
    assert unit.exec_start(["/usr/bin/python3", "-m", "inferwatch"], None) == (
        "ExecStart=/usr/bin/python3 -m inferwatch run --config %E/inferwatch/config.yaml"
    )


def test_this_inferwatch_is_the_script_that_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "bin" / "inferwatch"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(script), "install-service"])
    assert unit.this_inferwatch() == [str(script)]


def test_without_a_script_the_one_beside_python_or_python_m(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["-c"])
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)  # a venv's python is a link: it must not be resolved
    monkeypatch.setattr(sys, "executable", str(python))
    assert unit.this_inferwatch() == [str(python), "-m", "inferwatch"]
    beside = python.with_name("inferwatch")
    beside.write_text("#!/bin/sh\n")
    beside.chmod(0o755)
    assert unit.this_inferwatch() == [str(beside)]
    assert os.path.isabs(unit.this_inferwatch()[0])
