"""The CLI's rule commands: ``check --rules``, ``test-rules``, ``export prometheus-rules``."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO
from inferwatch.cli import main


def test_check_rules_reports_located_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: sum(\n    for: 5\n")
    assert main(["check", "--rules", str(bad), str(REPO / "rules" / "gpu.yaml")]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "embedded defaults: OK"
    assert f"{REPO / 'rules' / 'gpu.yaml'}: OK (4 rules)" in out
    assert any(
        line.startswith(f"{bad}:5:5: groups[0].rules[0].expr: could not parse") for line in out
    )
    assert f'{bad}:6:5: groups[0].rules[0].for: not a valid duration string: "5"' in out


def test_check_shipped_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--rules", "builtin:rules/*.yaml"]) == 0
    assert capsys.readouterr().out.count(": OK (") == 3


def test_test_rules_command(capsys: pytest.CaptureFixture[str]) -> None:
    path = REPO / "tests" / "rules" / "shipped" / "gpu.test.yaml"
    assert main(["test-rules", str(path)]) == 0
    assert "SUCCESS" in capsys.readouterr().out


def test_export_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "prometheus-rules"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("# Prometheus rules exported")
    target = tmp_path / "out.yaml"
    assert main(["export", "prometheus-rules", "--output", str(target)]) == 0
    assert target.read_text() == printed
