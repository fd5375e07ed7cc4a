"""The commands that talk to a running daemon find it from the config's ``listen`` (the
default config file included), and print readable text: ``status``, ``events``, ``digest
--preview``, ``silence``; the events API takes durations and RFC 3339."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import free_port, wait_until
from inferwatch.cli import DEFAULT_CONFIG_ENV, default_config, main
from integration.daemon_proc import ALWAYS_FIRING_RULES, start_daemon

pytestmark = pytest.mark.integration

RULES = ALWAYS_FIRING_RULES


def test_default_config_is_the_file_the_variable_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEFAULT_CONFIG_ENV, str(tmp_path / "absent.yaml"))
    assert default_config() is None
    present = tmp_path / "config.yaml"
    present.write_text("listen: 127.0.0.1:1\n")
    monkeypatch.setenv(DEFAULT_CONFIG_ENV, str(present))
    assert default_config() == str(present)


def test_check_uses_the_default_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "config.yaml"
    bad.write_text("metrics_ulr: x\n")
    monkeypatch.setenv(DEFAULT_CONFIG_ENV, str(bad))
    assert main(["check"]) == 2
    assert f"{bad}:1:1: metrics_ulr" in capsys.readouterr().out


def test_client_commands_find_the_daemon_from_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(
        f"listen: 127.0.0.1:{port}\ngpus: {{backend: off}}\nkernel: {{source: off}}\n"
        f"rule_files: [{rules}]\n"
        "route: {receiver: phone}\nreceivers: [{name: phone}]\n"
        "digests: [{name: morning, cron: '0 8 * * *', timezone: UTC}]\n"
    )
    d = start_daemon(tmp_path, "--config", str(config), port=port)
    monkeypatch.setenv(DEFAULT_CONFIG_ENV, str(config))  # no --config, no --listen below
    try:
        d.wait_ready()
        wait_until(lambda: "AlwaysFiring" in d.get("/api/v1/alerts").text, 30, "the alert")
        capsys.readouterr()
        assert main(["status"]) == 0
        out = capsys.readouterr().out
        assert f"on 127.0.0.1:{port}" in out
        assert "firing   AlwaysFiring{severity=warning}" in out and "always on" in out
        assert f"config: {config}" in out
        assert main(["status", "--json"]) == 0
        assert '"pid":' in capsys.readouterr().out

        wait_until(lambda: "alert" in d.get("/api/v1/events?since=10m").text, 30, "the event")
        assert main(["events", "--since", "10m", "--type", "alert"]) == 0
        out = capsys.readouterr().out
        assert "alert" in out and "alertname=AlwaysFiring" in out
        assert main(["events", "--since", "2000-01-01T00:00:00Z", "--type", "nothing"]) == 0
        assert capsys.readouterr().out == ""
        assert main(["events", "--since", "yesterday"]) == 1
        assert "is not a time" in capsys.readouterr().err

        assert main(["digest", "--preview", "morning"]) == 0
        assert "Daily" in capsys.readouterr().out
        assert main(["digest", "--preview", "evening"]) == 1
        assert "no digest 'evening' (digests: morning)" in capsys.readouterr().err

        assert main(["silence", "list"]) == 0
        assert "no silences" in capsys.readouterr().out
    finally:
        d.kill()


def test_an_unreachable_daemon_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(DEFAULT_CONFIG_ENV, str(tmp_path / "absent.yaml"))
    port = free_port()
    assert main(["status", "--listen", f"127.0.0.1:{port}"]) == 1
    assert f"cannot reach inferwatch at http://127.0.0.1:{port}" in capsys.readouterr().err
