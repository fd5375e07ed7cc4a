"""Hardening item 1: deeply nested YAML is a located error, never a crash of `check` or the
daemon."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from conftest import wait_until
from integration.daemon_proc import start_daemon
from reliability.attack_table import AttackRow
from reliability.confcheck import check

LEVELS = 10_000


def deep_list(levels: int = LEVELS) -> str:
    return "external_labels:\n  a: " + "[" * levels + "]" * levels + "\n"


def deep_mapping(levels: int = LEVELS) -> str:
    return "external_labels:\n  a: " + "{b: " * levels + "1" + "}" * levels + "\n"


@pytest.mark.parametrize("text", [deep_list(), deep_mapping()], ids=["lists", "mappings"])
def test_check_reports_deep_nesting_at_its_place(
    tmp_path: Path, text: str, attack: AttackRow
) -> None:
    attack.describe(f"`check` on {LEVELS:,}-level nesting", "exit 2, one located error")
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    result = check(path)
    attack.saw(f"exit {result.code}: {result.out.replace(str(path), 'deep.yaml')[:90]!r}")
    assert result.code == 2, result.out
    assert "Traceback" not in result.out
    [line] = result.out.strip().splitlines()
    assert re.fullmatch(
        rf"{re.escape(str(path))}:2:\d+: external_labels\.a[\[\].b0-9]*: "
        r"nested deeper than 64 levels",
        line,
    ), line


def test_nesting_up_to_the_limit_is_judged_as_usual(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe("nesting exactly at the 64-level limit", "judged as usual (a type error)")
    # 64 levels in all: the root mapping, external_labels, and 62 lists
    path = tmp_path / "ok-depth.yaml"
    path.write_text("external_labels:\n  a: " + "[" * 62 + "]" * 62 + "\n")
    result = check(path)
    assert result.code == 2, result.out
    attack.saw(f"exit {result.code}: {result.out.replace(str(path), 'ok-depth.yaml')[:80]!r}")
    assert "external_labels.a: Input should be a valid string" in result.out


@pytest.mark.integration
def test_sighup_with_a_deeply_nested_file_keeps_the_daemon_running(
    tmp_path: Path, attack: AttackRow
) -> None:
    attack.describe(
        f"SIGHUP with a {LEVELS:,}-level nested config",
        "reload refused, daemon keeps running; a fixed file then applies",
    )
    config = tmp_path / "c.yaml"
    config.write_text("gpus:\n  backend: 'off'\n")
    d = start_daemon(tmp_path, "--config", str(config))
    try:
        d.wait_ready()
        config.write_text("gpus:\n  backend: 'off'\n" + deep_list())
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "config reload failed" in d.log() or d.proc.poll() is not None, 30)
        attack.saw("daemon " + ("running" if d.proc.poll() is None else "exited"))
        assert d.proc.poll() is None, d.log()
        assert "nested deeper than 64 levels" in d.log()
        assert d.get("/healthz").status_code == 200
        config.write_text("gpus:\n  backend: 'off'\nlanguage: zh\n")  # fixed: it applies
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "config reloaded" in d.log(), 30)
        attack.saw("the fixed file reloaded")
    finally:
        code, _ = d.terminate()
    assert code == 0
