"""Prometheus and Alertmanager habits against the real daemon: Debian's amtool 0.25 adds,
queries and expires silences and lists alerts; /-/ready, /-/reload (a bad file keeps the
running config, sets the reload metric to 0 and shows in the status problems)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from conftest import require_tool, wait_until
from integration.daemon_proc import ALWAYS_FIRING_RULES, DaemonProc, start_daemon

pytestmark = pytest.mark.integration

RULES = ALWAYS_FIRING_RULES


def config_text(rules: Path) -> str:
    return (
        "gpus: {backend: off}\nkernel: {source: off}\n"
        f"rule_files: [{rules}]\n"
        "route: {receiver: phone, group_wait: 0s}\nreceivers: [{name: phone}]\n"
    )


def start(tmp_path: Path) -> tuple[DaemonProc, Path, Path]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    config = tmp_path / "c.yaml"
    config.write_text(config_text(rules))
    d = start_daemon(tmp_path, "--config", str(config))
    d.wait_ready()
    return d, config, rules


def amtool(d: DaemonProc, *args: str) -> str:
    tool = require_tool("amtool")
    done = subprocess.run(
        [tool, f"--alertmanager.url={d.base}", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, f"amtool {args}: {done.stderr}"
    return done.stdout


def test_amtool_silences_and_alerts(tmp_path: Path) -> None:
    require_tool("amtool")
    d, _config, _rules = start(tmp_path)
    try:
        wait_until(lambda: "AlwaysFiring" in amtool(d, "alert", "query"), 30, "the alert")
        sid = amtool(d, "silence", "add", "alertname=AlwaysFiring", "-c", "swap", "-d", "1h")
        sid = sid.strip()
        assert len(sid) == 36, sid
        listed = amtool(d, "silence", "query")
        assert sid in listed and "swap" in listed
        assert sid in amtool(d, "silence", "query", "alertname=AlwaysFiring")
        assert sid not in amtool(d, "silence", "query", "alertname=Other")
        assert "AlwaysFiring" not in amtool(d, "alert", "query")  # silenced ones are hidden
        suppressed = amtool(d, "alert", "query", "--silenced")
        assert "AlwaysFiring" in suppressed and "suppressed" in suppressed
        amtool(d, "silence", "expire", sid)
        assert sid not in amtool(d, "silence", "query")
        assert sid in amtool(d, "silence", "query", "--expired")
        wait_until(lambda: "AlwaysFiring" in amtool(d, "alert", "query"), 30, "the unmuted alert")
        assert "disabled" in amtool(d, "cluster", "show")
    finally:
        d.kill()


def test_ready_and_http_reload(tmp_path: Path) -> None:
    d, config, rules = start(tmp_path)
    try:
        wait_until(lambda: d.get("/-/ready").status_code == 200, 30, "/-/ready")
        assert d.get("/-/healthy").status_code == 200
        assert d.get("/-/reload").status_code == 405
        config.write_text(config_text(rules) + "metrics_ulr: x\n")
        r = httpx.post(d.base + "/-/reload", timeout=30, trust_env=False)
        assert r.status_code == 500
        assert f"{config}:6:1: metrics_ulr" in r.text
        assert "inferwatch_config_last_reload_successful 0.0" in d.metrics()
        problems = d.get("/api/v1/status").json()["problems"]
        assert any(f"{config}:6:1" in p for p in problems), problems
        assert d.get("/-/healthy").status_code == 200  # still running the previous config
        config.write_text(config_text(rules))
        r = httpx.post(d.base + "/-/reload", timeout=30, trust_env=False)
        assert r.status_code == 200, r.text
        assert "inferwatch_config_last_reload_successful 1.0" in d.metrics()
        assert d.get("/api/v1/status").json()["problems"] == []
    finally:
        d.kill()
